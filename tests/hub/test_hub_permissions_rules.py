"""The permission function on its own: every action has a rule, and the rules mean what they say."""

from __future__ import annotations

from dataclasses import replace

import pytest

from profilerhub_core.errors import AccessDenied, NotFound
from profilerhub_hub.permissions import RULES, Action, Caller, Rule, Target, authorize


def caller(
    role: str = "user",
    *,
    domain: str = "d1",
    user: str = "u1",
    platform: bool = False,
    self_service: bool = True,
    scopes: tuple[str, ...] = ("*",),
) -> Caller:
    return Caller(
        user_id=user,
        user_name=user,
        domain_id=domain,
        domain_name=domain,
        role=role,
        is_platform_admin=platform,
        users_manage_own_apps=self_service,
        token_id="t",
        scopes=scopes,
    )


def test_every_action_has_exactly_one_rule() -> None:
    assert set(RULES) == set(Action)


def test_platform_admin_may_do_everything_everywhere_but_self_only_actions() -> None:
    admin = caller("admin", domain="system", platform=True)
    for action in (a for a, rule in RULES.items() if rule not in (Rule.SELF, Rule.OWN_CREDENTIAL)):
        authorize(admin, action, Target(domain_id="d9", owner_id="someone"))


def test_opening_an_app_is_for_its_owner_alone_never_an_administrator() -> None:
    assert RULES[Action.OpenApp] is Rule.SELF
    alices = Target(domain_id="d1", owner_id="alice", not_found=NotFound("App not found"))
    authorize(caller(user="alice", self_service=False), Action.OpenApp, alices)
    authorize(caller("admin", user="alice"), Action.OpenApp, alices)  # an admin opens their own app
    portal = replace(alices, allow_impersonation=True)  # the domain lets administrators open apps
    for admin in (caller("admin", domain="system", platform=True), caller("admin", domain="d1")):
        with pytest.raises(AccessDenied, match="owner alone.*allow_impersonation"):
            authorize(admin, Action.OpenApp, alices)
        authorize(admin, Action.OpenApp, portal)  # SageMaker's portal pattern
    for stranger in (caller("user", user="bob"), caller("admin", domain="d2")):
        for target in (alices, portal):
            with pytest.raises(NotFound, match="App not found"):
                authorize(stranger, Action.OpenApp, target)


def test_changing_a_password_is_the_users_alone_with_a_credential_of_their_own() -> None:
    alices = Target(domain_id="d1", owner_id="alice", not_found=NotFound("User not found"))
    authorize(caller(user="alice"), Action.UpdatePassword, alices)
    made_for_her = replace(caller(user="alice"), impersonated_by="system/admin")
    for refused in (
        made_for_her,
        caller("admin", domain="system", platform=True),
        caller("admin", domain="d1"),
    ):
        with pytest.raises(AccessDenied):
            authorize(refused, Action.UpdatePassword, replace(alices, allow_impersonation=True))
    with pytest.raises(NotFound, match="User not found"):
        authorize(caller(user="bob"), Action.UpdatePassword, alices)


@pytest.mark.parametrize("action", sorted(Action))
def test_other_domain_is_hidden_from_domain_admins_and_users(action: Action) -> None:
    missing = NotFound("Domain 'd2' not found")
    for who in (caller("admin"), caller("user")):
        with pytest.raises(NotFound) as raised:
            authorize(who, action, Target(domain_id="d2", owner_id="x", not_found=missing))
        assert raised.value is missing


def test_user_resources_of_another_user_are_hidden() -> None:
    hidden = NotFound("User profile 'u2' not found in domain 'd1'")
    with pytest.raises(NotFound):
        authorize(caller(), Action.DescribeApp, Target(domain_id="d1", owner_id="u2", not_found=hidden))
    with pytest.raises(NotFound):
        authorize(caller(), Action.DeleteUserProfile, Target(domain_id="d1", owner_id="u2", not_found=hidden))


def test_user_manages_own_apps_only_where_the_domain_allows_it() -> None:
    own = Target(domain_id="d1", owner_id="u1")
    authorize(caller(), Action.CreateApp, own)
    with pytest.raises(AccessDenied):
        authorize(caller(self_service=False), Action.CreateApp, own)
    authorize(caller(self_service=False), Action.OpenApp, own)
    authorize(caller(self_service=False), Action.CreateJob, own)


def test_domain_admin_cannot_change_domains() -> None:
    for action in (a for a, rule in RULES.items() if rule is Rule.PLATFORM):
        with pytest.raises(AccessDenied):
            authorize(caller("admin"), action, Target(domain_id="d1"))


def test_token_scopes_narrow_what_a_token_may_do() -> None:
    narrow = caller(scopes=("DescribeUserProfile",))
    authorize(narrow, Action.DescribeUserProfile, Target(domain_id="d1", owner_id="u1"))
    with pytest.raises(AccessDenied, match="scopes"):
        authorize(narrow, Action.CreateToken, Target(domain_id="d1", owner_id="u1"))
