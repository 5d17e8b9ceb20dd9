"""Segmentation's parts of the training loop: mask batches, the per-pixel loss and mean IoU."""
