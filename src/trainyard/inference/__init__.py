"""Using trained models: classify images, look inside the network, evaluate, classify many.

- ``loader``: checkpoints loaded once and kept in a small LRU cache (warm requests do not reload)
- ``ort_runtime``: CPU forward passes through ONNX Runtime, the export cached beside the snapshot
- ``torch_forward``: the PyTorch network of a checkpoint (GPU, layer views, the fallback)
- ``classify``: preprocessing exactly as validation did, top-k predictions (numpy, no torch)
- ``visualize``: per-layer weights and activations as mosaics, with statistics and histograms
- ``gradcam``: a Grad-CAM saliency heat map over the input for a predicted class
- ``responses``: classify named images for a request, as the API's JSON (used by the CLI too)
- ``worker`` / ``workers``: custom networks answered from child processes, never the server
- ``metrics``: confusion matrix, accuracy, precision/recall/F1, most-confused pairs (numpy)
- ``evaluate``: a model over a dataset's val or test split
- ``sources`` / ``many``: classify a list file, a folder or an archive, streaming, bounded memory
- ``spec`` / ``results``: the torch-free job spec and what the API reads back from a job folder
- ``tasks`` / ``run``: the classify-many and evaluate jobs, ``python -m trainyard.inference.run JOBDIR``
- ``export``, ``onnx_export``, ``archive_import`` (its ``archive_files``, ``archive_weights``): the
  deployable archive (download and import)

``spec`` and ``results`` import no torch (the job registry uses them); neither do ``loader``,
``classify``, ``many``, ``evaluate`` and ``responses`` until a PyTorch network is needed.
"""
