"""Who may do what: every action of the API and the one function that decides it.

Routes never check roles. Each declares the ``Action`` it performs (``deps.allow(Action.X)``) and
``authorize(caller, action, target)`` decides from three facts: the caller (role, domain, token
scopes), the action, and the target (which domain it is in, which user owns it).

Roles:

    platform admin   admin of the reserved domain ``system``: every action everywhere
    domain admin     every action inside their own domain, except the platform's own
                     (create, update, delete domains)
    user             their own resources only (``RULES`` says which); apps only when their
                     domain's ``users_manage_own_apps`` is true

``Rule.OWN_CREDENTIAL`` (changing one's password) is the user's alone, and never through a
credential an administrator made for them, whatever the domain allows.

One rule overrides the roles: ``Rule.SELF`` actions (opening an app, which shows the user's
traces) are for the owner alone. An administrator can create and delete a user's app but opens it
only where the user's domain has ``allow_impersonation`` on (off by default; SageMaker's portal
pattern, ``CreatePresignedDomainUrl`` for a user's profile), audited as impersonation; elsewhere
they get ``AccessDenied`` naming that setting, since they may already see that the app exists.
The same holds for a token or sign-in link an administrator made for the user
(``Caller.impersonated_by``).

Outcomes: allowed; ``AccessDenied`` (403) when the caller may see the target but not do this; and
``NotFound`` (404, worded exactly like a missing resource) when the target is in another domain
or belongs to another user, because a different answer would reveal that it exists.

``RULES`` is checked when this module loads: every action has exactly one rule.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from profilerhub_core.db.models import Domain, UserProfile
from profilerhub_core.errors import AccessDenied, NotFound
from profilerhub_core.records.tokens import ALL_SCOPES


class Action(enum.StrEnum):
    CreateDomain = "CreateDomain"
    ListDomains = "ListDomains"
    DescribeDomain = "DescribeDomain"
    UpdateDomain = "UpdateDomain"
    UpdateDomainSettings = "UpdateDomainSettings"
    DeleteDomain = "DeleteDomain"
    CreateUserProfile = "CreateUserProfile"
    ListUserProfiles = "ListUserProfiles"
    DescribeUserProfile = "DescribeUserProfile"
    UpdateUserProfile = "UpdateUserProfile"
    DeleteUserProfile = "DeleteUserProfile"
    CreateToken = "CreateToken"
    ListTokens = "ListTokens"
    DeleteToken = "DeleteToken"
    CreatePresignedSignInUrl = "CreatePresignedSignInUrl"
    CreateInvitation = "CreateInvitation"
    ListInvitations = "ListInvitations"
    DeleteInvitation = "DeleteInvitation"
    UpdatePassword = "UpdatePassword"
    DescribeTwoFactor = "DescribeTwoFactor"
    UpdateTwoFactor = "UpdateTwoFactor"
    ReadAudit = "ReadAudit"
    CreateApp = "CreateApp"
    ListApps = "ListApps"
    DescribeApp = "DescribeApp"
    UpdateApp = "UpdateApp"
    DeleteApp = "DeleteApp"
    OpenApp = "OpenApp"
    ListAllApps = "ListAllApps"
    CreateJob = "CreateJob"
    ListJobs = "ListJobs"
    ReadJob = "ReadJob"
    CompleteJob = "CompleteJob"
    UploadJobFile = "UploadJobFile"
    DeleteJob = "DeleteJob"
    StopJob = "StopJob"
    UpdateJob = "UpdateJob"
    CreateWebhook = "CreateWebhook"
    ListWebhooks = "ListWebhooks"
    DescribeWebhook = "DescribeWebhook"
    DeleteWebhook = "DeleteWebhook"


class Rule(enum.Enum):
    """The least a caller must be for an action (platform admins pass every rule but ``SELF``)."""

    PLATFORM = "platform admin only"
    DOMAIN_ADMIN = "an admin of the target's domain (or any admin, for cross-domain listings)"
    MEMBER = "any member of the target's domain"
    OWNER = "the owner of the target, or an admin of its domain"
    OWNER_IF_SELF_SERVICE = "like OWNER, but users only where the domain lets users manage their own apps"
    SELF = "the owner of the target alone: no administrator, not even a platform admin"
    OWN_CREDENTIAL = "the user alone, with a credential of their own: never an administrator or impersonation"


RULES: dict[Action, Rule] = {
    Action.CreateDomain: Rule.PLATFORM,
    Action.UpdateDomain: Rule.PLATFORM,
    Action.UpdateDomainSettings: Rule.DOMAIN_ADMIN,  # the everyday ones: DOMAIN_ADMIN_SETTINGS
    Action.DeleteDomain: Rule.PLATFORM,
    Action.ListDomains: Rule.MEMBER,
    Action.DescribeDomain: Rule.MEMBER,
    Action.CreateUserProfile: Rule.DOMAIN_ADMIN,
    Action.ListUserProfiles: Rule.DOMAIN_ADMIN,
    Action.DescribeUserProfile: Rule.OWNER,
    Action.UpdateUserProfile: Rule.DOMAIN_ADMIN,
    Action.DeleteUserProfile: Rule.DOMAIN_ADMIN,
    Action.CreateToken: Rule.OWNER,
    Action.ListTokens: Rule.OWNER,
    Action.DeleteToken: Rule.OWNER,
    Action.CreatePresignedSignInUrl: Rule.OWNER,
    # Local accounts: administrators invite (and so reset); only the user changes their password.
    Action.CreateInvitation: Rule.DOMAIN_ADMIN,
    Action.ListInvitations: Rule.DOMAIN_ADMIN,
    Action.DeleteInvitation: Rule.DOMAIN_ADMIN,
    Action.UpdatePassword: Rule.OWN_CREDENTIAL,
    Action.DescribeTwoFactor: Rule.OWN_CREDENTIAL,
    Action.UpdateTwoFactor: Rule.OWN_CREDENTIAL,
    Action.ReadAudit: Rule.DOMAIN_ADMIN,
    Action.CreateApp: Rule.OWNER_IF_SELF_SERVICE,
    Action.ListApps: Rule.OWNER,
    Action.DescribeApp: Rule.OWNER,
    Action.UpdateApp: Rule.OWNER_IF_SELF_SERVICE,
    Action.DeleteApp: Rule.OWNER_IF_SELF_SERVICE,
    Action.OpenApp: Rule.SELF,
    Action.ListAllApps: Rule.DOMAIN_ADMIN,
    Action.CreateJob: Rule.OWNER,
    Action.ListJobs: Rule.OWNER,
    Action.ReadJob: Rule.OWNER,
    Action.CompleteJob: Rule.OWNER,
    Action.UploadJobFile: Rule.OWNER,
    Action.DeleteJob: Rule.OWNER,
    Action.StopJob: Rule.OWNER,
    Action.UpdateJob: Rule.OWNER,
    # A user's webhooks are theirs; the domain's own (every job there) its administrators'.
    Action.CreateWebhook: Rule.OWNER,
    Action.ListWebhooks: Rule.OWNER,
    Action.DescribeWebhook: Rule.OWNER,
    Action.DeleteWebhook: Rule.OWNER,
}

# A token scoped for the key of this table may also do its value (a narrower change).
IMPLIED_BY: dict[Action, Action] = {Action.UpdateDomainSettings: Action.UpdateDomain}

# Actions that change something: refusals of these are written to the audit log.
MUTATING = frozenset(
    a for a in Action if a.value.startswith(("Create", "Update", "Delete", "Complete", "Upload", "Stop"))
)


def _validate_rules() -> None:
    missing = set(Action) - set(RULES)
    if missing:
        raise RuntimeError(f"permissions.RULES has no rule for {sorted(missing)}")


_validate_rules()


@dataclass(frozen=True, slots=True)
class Caller:
    """The authenticated user behind a request (built once per request from the token)."""

    user_id: str
    user_name: str
    domain_id: str
    domain_name: str
    role: str
    is_platform_admin: bool
    users_manage_own_apps: bool
    token_id: str
    scopes: tuple[str, ...]
    # Set when the credential was made for this user by someone else (an administrator's token or
    # sign-in link): who. Such a caller opens the user's apps only where the domain allows it.
    impersonated_by: str | None = None
    allow_impersonation: bool = False
    session_id: str | None = None  # a browser session's id, when the caller came with a cookie
    # The API token behind the credential (a session's: the token it was started with, if any),
    # and when the credential expires (None: never): what a session it starts must not outlive.
    source_token_id: str | None = None
    expires_at: datetime | None = None
    # The kind of credential at the root (``records.sessions``: token, access-key, oidc, password)
    # and the root token's own expiry: a token this caller mints expires no later.
    source_kind: str = "token"
    root_expires_at: datetime | None = None
    # What a token or access key this caller mints records as its lineage's root (``ApiToken.source``):
    # the root token's own, when it has one, else ``source_kind``.
    root_source: str | None = None

    @property
    def is_domain_admin(self) -> bool:
        return self.role == "admin"

    @property
    def actor(self) -> str:
        """How the audit log names this caller."""
        return f"{self.domain_name}/{self.user_name}"


@dataclass(frozen=True, slots=True)
class Target:
    """What an action acts on. ``domain_id`` None: the action spans domains (create or list domains,
    read the audit log, list all apps); the route then narrows what a non-platform caller sees.
    ``not_found`` is the 404 error a hidden target answers with: the same one a missing target gets."""

    domain_id: str | None = None
    owner_id: str | None = None
    not_found: NotFound | None = None
    # The target's domain lets administrators open its users' apps (``allow_impersonation``).
    allow_impersonation: bool = False


def _hidden(target: Target) -> NotFound:
    return target.not_found or NotFound("Resource not found")


def check_domain_visible(caller: Caller, domain_id: str, not_found: NotFound) -> None:
    """Raise ``not_found`` unless ``caller`` may see the domain at all. Call it before looking up
    anything inside the domain, so a missing and a hidden resource there answer alike."""
    if not caller.is_platform_admin and domain_id != caller.domain_id:
        raise not_found


def check_grantable(caller: Caller, scopes: Sequence[str]) -> None:
    """Raise ``AccessDenied`` unless every scope in ``scopes`` is one ``caller``'s token has.

    A token can mint tokens for what it may do itself and no more: ``["CreateToken"]`` can mint
    ``["CreateToken"]`` but never ``["*"]`` or ``["DeleteApp"]``. (Only ``"*"`` grants ``"*"``.)
    """
    if ALL_SCOPES in caller.scopes:
        return
    wider = sorted(set(scopes) - set(caller.scopes))
    if wider:
        raise AccessDenied(
            f"A token cannot grant scopes it does not have: {', '.join(wider)} "
            f"(this token has {', '.join(caller.scopes)})"
        )


def visible_domain(caller: Caller) -> str | None:
    """The one domain a listing that spans domains (domains, every app, the audit log) shows
    ``caller``: their own; ``None`` for a platform admin, who sees every domain. ``authorize`` has
    already allowed the listing itself; list routes narrow with this, never by role inline."""
    return None if caller.is_platform_admin else caller.domain_id


def authorize(caller: Caller, action: Action, target: Target) -> None:
    """Return when ``caller`` may do ``action`` on ``target``; raise ``AccessDenied`` or ``NotFound``."""
    implied = IMPLIED_BY.get(action)
    granted = {action.value} | ({implied.value} if implied else set())
    if ALL_SCOPES not in caller.scopes and not granted & set(caller.scopes):
        raise AccessDenied(f"This token's scopes do not include {action.value}")
    rule = RULES[action]
    if rule is Rule.SELF:
        _authorize_self(caller, action, target)
        return
    if rule is Rule.OWN_CREDENTIAL:
        _authorize_own_credential(caller, action, target)
        return
    if caller.is_platform_admin:
        return
    if target.domain_id is not None:
        if target.domain_id != caller.domain_id:
            raise _hidden(target)
        # Users cannot see each other's resources at all, whatever the action.
        if not caller.is_domain_admin and target.owner_id not in (None, caller.user_id):
            raise _hidden(target)
    if rule is Rule.PLATFORM:
        raise AccessDenied(f"{action.value} is for platform administrators")
    if caller.is_domain_admin or rule is Rule.MEMBER:
        return
    if rule is Rule.DOMAIN_ADMIN:
        raise AccessDenied(f"{action.value} is for domain administrators")
    if target.owner_id is None:
        raise AccessDenied(f"{action.value} needs a resource of your own")
    if rule is Rule.OWNER_IF_SELF_SERVICE and not caller.users_manage_own_apps:
        raise AccessDenied(f"Your domain does not let users {action.value}; ask a domain administrator")


def _authorize_self(caller: Caller, action: Action, target: Target) -> None:
    if target.owner_id is not None and target.owner_id == caller.user_id:
        if caller.impersonated_by and not caller.allow_impersonation:
            raise AccessDenied(
                f"{action.value}: this credential was made for you by {caller.impersonated_by}, and your "
                "domain does not allow impersonation (its allow_impersonation setting); sign in "
                "yourself, or use a token you created"
            )
        return
    admin_of_target = caller.is_platform_admin or (
        caller.is_domain_admin and target.domain_id == caller.domain_id
    )
    if not admin_of_target:
        raise _hidden(target)
    if target.allow_impersonation:  # SageMaker's portal pattern: audited as impersonation
        return
    raise AccessDenied(
        f"{action.value} is for the owner alone: an administrator opens a user's app only where the "
        "user's domain allows impersonation (its allow_impersonation setting, which a platform "
        "administrator turns on with PATCH /domains/{domain})"
    )


def _authorize_own_credential(caller: Caller, action: Action, target: Target) -> None:
    if target.owner_id is None or target.owner_id != caller.user_id:
        if caller.is_platform_admin or (caller.is_domain_admin and target.domain_id == caller.domain_id):
            raise AccessDenied(
                f"{action.value} is for the user alone: an administrator resets it with an invitation"
            )
        raise _hidden(target)
    if caller.impersonated_by:
        raise AccessDenied(
            f"{action.value}: this credential was made for you by {caller.impersonated_by}; "
            "sign in yourself to do this"
        )


def impersonator(caller: Caller, user_id: str) -> str | None:
    """Who a credential made by ``caller`` for ``user_id`` impersonates the user as (None: nobody).

    Someone else's making, or made from a credential that was itself someone else's making."""
    if caller.user_id != user_id:
        return caller.actor
    return caller.impersonated_by


@dataclass(frozen=True, slots=True)
class Resolved:
    """The target of a request, looked up from its path and authorized for the caller.

    ``domain`` and ``user`` are the rows, where the lookup loaded them; a read that found its
    target as plain values (``owner_target``) carries none (only refused changes, which are
    audited, need them)."""

    caller: Caller
    target: Target
    domain: Domain | None = None
    user: UserProfile | None = None

    @property
    def kind(self) -> str:
        """How the audit log names the target's type (``UserProfile``, ``Domain`` or ``Hub``)."""
        if self.user is not None:
            return "UserProfile"
        return "Domain" if self.domain is not None else "Hub"

    @property
    def name(self) -> str:
        """How the audit log names the target (``domain/user`` or ``domain``)."""
        if self.user is not None and self.domain is not None:
            return f"{self.domain.name}/{self.user.name}"
        return self.domain.name if self.domain is not None else "*"


__all__ = [
    "Resolved",
    "MUTATING",
    "RULES",
    "Action",
    "Caller",
    "Rule",
    "Target",
    "authorize",
    "check_domain_visible",
    "check_grantable",
    "impersonator",
    "visible_domain",
]
