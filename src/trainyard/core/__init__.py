"""Small shared pieces with no heavy imports: job status, events, ids, paths.

Everything here must stay importable without torch, SQLAlchemy or FastAPI, so that the training
subprocess and the web server can both use it.
"""
