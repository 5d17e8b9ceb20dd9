"""What the JSON routes under /api answer, as pydantic models, one module per concern (jobs, inference, runs)."""
