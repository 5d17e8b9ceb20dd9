"""Accounts of a shared server: users with roles, their API tokens, who owns which job, the audit log."""
