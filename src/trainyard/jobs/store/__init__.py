"""The job store: its tables (SQLAlchemy), the database connection, schema upgrades, tags and notes."""
