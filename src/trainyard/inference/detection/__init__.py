"""Detection inference: a detector loaded from its checkpoint (detector.py), boxes for images in
the images' own pixels (detect.py) and the evaluation of a split by COCO mAP (evaluate.py)."""
