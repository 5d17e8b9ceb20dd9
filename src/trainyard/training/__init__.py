"""Training: solvers, learning-rate policies, on-device augmentation and the training loop.

The training process imports nothing from the web, the database or the scheduler: it reads its
job folder and writes to it.
"""
