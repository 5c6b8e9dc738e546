"""The hub's use cases: one module per resource, one function per operation, whatever the door.

    routes/ (REST, and the console's pages)  ─┐
    sagemaker/operations.py                  ─┼─► usecases.<resource>.<operation>(door, target, …)
    console/routes.py (its server steps)     ─┘        ─► records (validate, write, flush)
                                                       ─► door.commit: the operation's one audit row
                                                       ─► door.send: the worker's task, after it

A door parses its protocol, finds and authorizes the target (``deps.targets``: REST's ``allow``
and SageMaker's ``Call.allowed`` both end in ``authorize_resolved``), calls one use case and
translates the answer. No door re-implements a rule, a check or an audit row; no web ``Request``
reaches a use case (``Door`` carries what it needs).

    apps      create_app, delete_app, open_app
    domains   create_domain, update_domain, delete_domain
    users     create_user, update_user, delete_user, create_on_first_sign_in
    jobs      create_job, complete_job, delete_job
    accounts  invite_user, revoke_invitation, accept_invitation(_for_token), password_sign_in,
              password_token, change_password
"""

from profilerhub_hub.usecases.door import Door, TaskQueue, Via, door_of

__all__ = ["Door", "TaskQueue", "Via", "door_of"]
