"""Limits that requests are checked against before anything is queued, shared by the training
spec (which loads torch) and the job creators (which must not), so each is written once."""

MAX_NAME = 200  # characters of a job's name, as the pages and the database show it
MAX_PROCESSES = 1024  # data-parallel processes per node; the job creator also caps it by the hardware
