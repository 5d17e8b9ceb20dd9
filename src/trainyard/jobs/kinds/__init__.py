"""The kinds of job and how each is created from user input: datasets, models (and sweeps), inference, imports."""
