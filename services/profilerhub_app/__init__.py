"""The per-user profiler app: an API over one user's jobs plus its static UI."""
