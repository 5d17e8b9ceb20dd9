"""Multi-label classification datasets: CSV lists of images with several labels each."""
