"""Semantic segmentation datasets (issue 43): images with masks (index PNGs, colour PNGs with a
colour table, a Pascal VOC root, COCO polygons and RLE), stored as a classification split plus one
mask per image."""
