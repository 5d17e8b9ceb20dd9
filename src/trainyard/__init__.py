"""trainyard: turn a folder of images into a trained, deployable neural network."""

__version__ = "0.1.0"
