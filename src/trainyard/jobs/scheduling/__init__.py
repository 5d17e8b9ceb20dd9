"""When and where jobs start: resource pools and leases, readiness, what a job waits for, the scheduler thread."""
