"""The control-plane API: domains, users, tokens, permissions, apps, jobs, audit, proxy."""
