"""Datasets: find labelled images, resize them the DIGITS way and store each split for fast reads.

Entry points: ``build.build_dataset`` (run as a job by ``python -m trainyard.datasets.run``),
``storage.open_split`` for readers, ``spec.DatasetSpec`` for the job's input.
"""
