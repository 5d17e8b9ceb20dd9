"""Jobs: the store (SQLAlchemy), resource leases, the runner (subprocesses) and the scheduler."""
