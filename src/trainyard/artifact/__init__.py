"""The trained-model artefact: what training writes and inference, export and import read.

A checkpoint (checkpoint.py: its format, saving, loading, finding a job's epochs, rebuilding its
network), the preprocessing that turns an image into that network's input (normalize.py: one
path for training, validation, classify and export) and building a network for a spec or a
checkpoint, fresh or from pretrained weights (network.py). It imports core, datasets and
networks; training and inference import it, and it imports neither.
"""
