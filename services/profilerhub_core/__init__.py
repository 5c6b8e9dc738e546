"""Shared server-side foundations: settings, database, storage, security, errors."""
