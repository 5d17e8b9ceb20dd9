"""Segmentation's inference: index-PNG masks for new images, and mean IoU on a dataset split."""
