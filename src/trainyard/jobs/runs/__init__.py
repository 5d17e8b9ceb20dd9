"""Running jobs: the manager, the subprocess runner and its sandbox, progress, heartbeats, a user's actions."""
