"""Detection datasets: box labels read from KITTI, YOLO, COCO or Pascal VOC, images resized with
their boxes (pad or squash), and each split stored beside its boxes (store.py) for training.
"""
