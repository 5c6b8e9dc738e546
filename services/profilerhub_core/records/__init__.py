"""Model functions: the one place that reads and writes records.

Each function takes a ``Session``, does its work, and ``flush()``es; the caller (a route, a task,
a CLI command) commits once. They raise ``profilerhub_core.errors`` exceptions, never HTTP ones.

    domains   create / get / update / delete domains
    users     create / get / delete user profiles (platform admins live in domain ``system``)
    tokens    issue / list / revoke API tokens; authenticate a bearer secret
    audit     record_audit and the audit query
    tags      SageMaker-style tags on domains, user profiles and apps
    bootstrap the first-start platform administrator
"""
