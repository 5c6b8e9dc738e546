"""FastAPI dependencies, declared once as ``Annotated`` aliases and used as parameter types.

    SettingsDep   the process's Settings (passed to create_app)               session.py
    SessionDep    a database Session for this request; the route commits once  session.py
    CallerDep     the authenticated Caller (401 without a valid bearer token)  auth.py
    allow(X)      authorize action X on the request's target -> ``Resolved``    targets.py
    PageDep       ``limit`` and ``next_token`` of a list route; ``.fetch``     paging.py

A route declares the action it performs, and gets the resolved target back:

    @router.get("/domains/{domain}/users/{user}")
    def describe_user(target: Annotated[Resolved, allow(Action.DescribeUserProfile)]) -> UserRead:
        return UserRead.of(target.user)

Committing a change is ``profilerhub_hub.audit.commit_audited`` (with its audit event).
"""

from profilerhub_hub.deps.auth import CallerDep, caller_from_token, lineage
from profilerhub_hub.deps.paging import PageDep, PageParams
from profilerhub_hub.deps.session import SessionCloser, SessionDep, SettingsDep
from profilerhub_hub.deps.targets import Resolved, allow, resolve

__all__ = [
    "CallerDep",
    "PageDep",
    "PageParams",
    "Resolved",
    "SessionCloser",
    "SessionDep",
    "SettingsDep",
    "allow",
    "caller_from_token",
    "lineage",
    "resolve",
]
