"""Semantic segmentation datasets: images with index-PNG masks (issue 43), stored as a
classification split plus one mask per image."""
