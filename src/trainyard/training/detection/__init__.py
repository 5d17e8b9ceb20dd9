"""Training a detector: batches of images with their boxes (data.py), the summed detection loss
and validation by COCO mAP (steps.py). The loop, solvers, schedules and checkpoints are
classification's (training/loop.py); only what a batch is and how it is scored differ.
"""
