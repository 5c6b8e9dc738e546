"""boto3's own ``sagemaker`` client against the hub's ``/sagemaker`` endpoint, over real HTTP.

Real parts: uvicorn on a loopback port, botocore's signer and parsers, the database (SQLite and
PostgreSQL), Redis, app processes started by the worker's lifecycle functions in threads.
Every answer is checked against botocore's output shape for its operation (``check_output``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.support.hub import auth, wait_for
from tests.support.sagemaker import Keys, check_output

APP = {"AppType": "DetailedProfiler", "AppName": "default"}


def _code(error: pytest.ExceptionInfo[ClientError]) -> str:
    return str(error.value.response["Error"]["Code"])


def _status(sm: Any, domain_id: str, user: str, app_name: str = "default") -> str:
    answer = sm.describe_app(
        DomainId=domain_id, UserProfileName=user, AppType="DetailedProfiler", AppName=app_name
    )
    return str(check_output(sm, "DescribeApp", answer)["Status"])


def test_admin_runs_the_whole_lifecycle_domain_user_app_in_service_and_back(
    sm_client: Any, issue_keys: Any, apps_client: Any, seed: Any
) -> None:
    sm = sm_client(issue_keys("system", "root", "admin"))
    created = check_output(
        sm,
        "CreateDomain",
        sm.create_domain(
            DomainName="research",
            AuthMode="SSO",
            DefaultUserSettings={},
            SubnetIds=["subnet-1"],
            VpcId="vpc-1",
        ),
    )
    domain_id = created["DomainId"]
    assert (
        domain_id.startswith("d-")
        and created["DomainArn"] == f"arn:aws:sagemaker:us-east-1:000000000000:domain/{domain_id}"
    )
    described = check_output(sm, "DescribeDomain", sm.describe_domain(DomainId=domain_id))
    assert described["DomainName"] == "research" and described["Status"] == "InService"
    assert described["AuthMode"] == "SSO" and described["VpcId"] == "vpc-1"  # stored and echoed
    assert described["SubnetIds"] == ["subnet-1"]

    profile = check_output(
        sm, "CreateUserProfile", sm.create_user_profile(DomainId=domain_id, UserProfileName="alice")
    )
    assert profile["UserProfileArn"].endswith(f":user-profile/{domain_id}/alice")
    user = check_output(
        sm, "DescribeUserProfile", sm.describe_user_profile(DomainId=domain_id, UserProfileName="alice")
    )
    assert user["UserProfileName"] == "alice" and user["Status"] == "InService"

    app = check_output(sm, "CreateApp", sm.create_app(DomainId=domain_id, UserProfileName="alice", **APP))
    assert app["AppArn"].endswith(f":app/{domain_id}/alice/detailedprofiler/default")
    wait_for(lambda: _status(sm, domain_id, "alice") == "InService", "the app InService", 180)

    listed = check_output(sm, "ListApps", sm.list_apps(DomainIdEquals=domain_id))
    assert [(a["UserProfileName"], a["Status"]) for a in listed["Apps"]] == [("alice", "InService")]
    # The REST API sees the same app: one service, two doors.
    rest = apps_client.get(
        "/api/v1/domains/research/users/alice/apps/DetailedProfiler/default", headers=auth(seed.admin_token)
    )
    assert rest.status_code == 200 and rest.json()["status"] == "InService"

    with pytest.raises(ClientError) as in_use:
        sm.delete_user_profile(DomainId=domain_id, UserProfileName="alice")
    assert _code(in_use) == "ResourceInUse"
    check_output(sm, "DeleteApp", sm.delete_app(DomainId=domain_id, UserProfileName="alice", **APP))
    wait_for(lambda: _status(sm, domain_id, "alice") == "Deleted", "the app Deleted", 180)
    with pytest.raises(ClientError) as has_users:
        sm.delete_domain(DomainId=domain_id)
    assert _code(has_users) == "ResourceInUse"
    check_output(sm, "DeleteUserProfile", sm.delete_user_profile(DomainId=domain_id, UserProfileName="alice"))
    check_output(sm, "DeleteDomain", sm.delete_domain(DomainId=domain_id))
    with pytest.raises(sm.exceptions.ResourceNotFound):
        sm.describe_domain(DomainId=domain_id)


def test_paginators_walk_every_domain_user_and_app_in_pages(
    sm_client: Any, issue_keys: Any, seed: Any
) -> None:
    sm = sm_client(issue_keys("system", "root", "admin"))
    domain_id = sm.create_domain(DomainName="paged", AuthMode="IAM", DefaultUserSettings={})["DomainId"]
    for i in range(5):
        sm.create_user_profile(DomainId=domain_id, UserProfileName=f"u{i}")
    pages = list(
        sm.get_paginator("list_user_profiles").paginate(
            DomainIdEquals=domain_id,
            SortBy="CreationTime",
            SortOrder="Ascending",
            PaginationConfig={"PageSize": 2},
        )
    )
    for page in pages:
        check_output(sm, "ListUserProfiles", page)
    assert [len(p["UserProfiles"]) for p in pages] == [2, 2, 1]
    assert [u["UserProfileName"] for p in pages for u in p["UserProfiles"]] == [f"u{i}" for i in range(5)]

    domains = [
        d["DomainName"]
        for p in sm.get_paginator("list_domains").paginate(PaginationConfig={"PageSize": 1})
        for d in check_output(sm, "ListDomains", p)["Domains"]
    ]
    assert sorted(domains) == ["paged", "system"]
    everything = sm.get_paginator("list_apps").paginate(DomainIdEquals=domain_id).build_full_result()
    assert everything["Apps"] == []

    with pytest.raises(ClientError) as bad_token:
        sm.list_user_profiles(DomainIdEquals=domain_id, NextToken="not-a-token")
    assert _code(bad_token) == "ValidationException"


def test_errors_arrive_as_botocore_client_errors_with_sagemakers_codes(
    sm_client: Any, issue_keys: Any, seed: Any
) -> None:
    sm = sm_client(issue_keys("system", "root", "admin"))
    domain_id = sm.create_domain(DomainName="errs", AuthMode="IAM", DefaultUserSettings={})["DomainId"]
    with pytest.raises(sm.exceptions.ResourceInUse):
        sm.create_domain(DomainName="errs", AuthMode="IAM", DefaultUserSettings={})
    with pytest.raises(sm.exceptions.ResourceNotFound):
        sm.describe_domain(DomainId="d-" + "0" * 32)
    with pytest.raises(sm.exceptions.ResourceNotFound):
        sm.describe_user_profile(DomainId=domain_id, UserProfileName="nobody")
    sm.create_user_profile(DomainId=domain_id, UserProfileName="bob")
    with pytest.raises(sm.exceptions.ResourceNotFound):
        sm.describe_app(DomainId=domain_id, UserProfileName="bob", **APP)
    with pytest.raises(ClientError) as bad_type:
        sm.create_app(DomainId=domain_id, UserProfileName="bob", AppType="JupyterServer", AppName="default")
    assert _code(bad_type) == "ValidationException" and "not supported" in str(bad_type.value)
    with pytest.raises(ClientError) as bad_name:
        sm.create_user_profile(DomainId=domain_id, UserProfileName="-bad-")
    assert _code(bad_name) == "ValidationException"
    with pytest.raises(ClientError) as spaces:
        sm.describe_app(DomainId=domain_id, SpaceName="s", **APP)
    assert _code(spaces) == "ValidationException"
    with seed.session() as session:  # nothing was created by the refused requests
        from profilerhub_core.db.models import App, UserProfile

        assert session.query(App).count() == 0
        assert {u.name for u in session.query(UserProfile)} == {"admin", "root", "bob"}


def test_a_wrong_secret_an_unknown_key_a_revoked_key_and_an_old_signature_are_refused(
    sm_client: Any, issue_keys: Any, apps_client: Any, seed: Any
) -> None:
    keys = issue_keys("system", "root", "admin")
    wrong = sm_client(Keys(keys.access_key_id, "x" * 40))
    with pytest.raises(ClientError) as mismatch:
        wrong.list_domains()
    assert _code(mismatch) == "InvalidSignatureException"
    assert mismatch.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    with pytest.raises(ClientError) as unknown:
        sm_client(Keys("PHAKAAAAAAAAAAAA", keys.secret_access_key)).list_domains()
    assert _code(unknown) == "UnrecognizedClientException"
    with pytest.raises(ClientError) as not_ours:
        sm_client(Keys("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")).list_domains()
    assert _code(not_ours) == "UnrecognizedClientException"

    sm = sm_client(keys)
    _signed_at(sm, datetime.now(UTC) - timedelta(minutes=6))
    with pytest.raises(ClientError) as expired:
        sm.list_domains()
    assert _code(expired) == "InvalidSignatureException" and "Signature expired" in str(expired.value)

    fresh = sm_client(keys)
    assert check_output(fresh, "ListDomains", fresh.list_domains())["Domains"]
    revoked = apps_client.delete(
        f"/api/v1/domains/system/users/root/access-keys/{keys.access_key_id}", headers=auth(seed.admin_token)
    )
    assert revoked.status_code == 204
    with pytest.raises(ClientError) as gone:
        fresh.list_domains()
    assert _code(gone) == "UnrecognizedClientException"


def _signed_at(client: Any, when: datetime) -> None:
    """Make ``client`` sign its requests as if its clock read ``when`` (signing again after its
    own signer, which replaces the Authorization and X-Amz-Date headers)."""
    import botocore.auth

    def sign_then(request: Any, **_: Any) -> None:
        real = botocore.auth.get_current_datetime
        botocore.auth.get_current_datetime = lambda: when.replace(tzinfo=None)  # type: ignore[assignment]
        try:
            client._request_signer.sign("ListDomains", request)
        finally:
            botocore.auth.get_current_datetime = real  # type: ignore[assignment]

    client.meta.events.register("request-created.sagemaker", sign_then)


def test_a_users_key_manages_their_own_apps_and_cannot_see_another_users(
    sm_client: Any, issue_keys: Any, seed: Any
) -> None:
    admin = sm_client(issue_keys("system", "root", "admin"))
    domain_id = admin.create_domain(DomainName="iso", AuthMode="IAM", DefaultUserSettings={})["DomainId"]
    alice = sm_client(issue_keys("iso", "alice"))
    bob = sm_client(issue_keys("iso", "bob"))
    alice.create_app(DomainId=domain_id, UserProfileName="alice", **APP)
    wait_for(lambda: _status(alice, domain_id, "alice") == "InService", "alice's app InService", 180)

    with pytest.raises(bob.exceptions.ResourceNotFound):  # hidden, worded like a missing app
        bob.describe_app(DomainId=domain_id, UserProfileName="alice", **APP)
    with pytest.raises(bob.exceptions.ResourceNotFound):
        bob.delete_app(DomainId=domain_id, UserProfileName="alice", **APP)
    with pytest.raises(bob.exceptions.ResourceNotFound):
        bob.list_apps(DomainIdEquals=domain_id, UserProfileNameEquals="alice")
    assert check_output(bob, "ListApps", bob.list_apps(DomainIdEquals=domain_id))["Apps"] == []
    mine = check_output(alice, "ListApps", alice.list_apps())["Apps"]
    assert [(a["UserProfileName"], a["Status"]) for a in mine] == [("alice", "InService")]
    with pytest.raises(ClientError) as not_admin:
        bob.create_domain(DomainName="mine", AuthMode="IAM", DefaultUserSettings={})
    assert _code(not_admin) == "AccessDeniedException"
    with pytest.raises(ClientError) as no_listing:
        bob.list_user_profiles(DomainIdEquals=domain_id)
    assert _code(no_listing) == "AccessDeniedException"

    url = check_output(
        alice,
        "CreatePresignedDomainUrl",
        alice.create_presigned_domain_url(DomainId=domain_id, UserProfileName="alice"),
    )
    assert "/apps/" in url["AuthorizedUrl"] and "token=" in url["AuthorizedUrl"]
    with pytest.raises(ClientError) as admin_url:  # the owner alone opens an app, as in REST
        admin.create_presigned_domain_url(DomainId=domain_id, UserProfileName="alice")
    assert _code(admin_url) == "AccessDeniedException"
    with pytest.raises(ClientError) as bob_url:
        bob.create_presigned_domain_url(DomainId=domain_id, UserProfileName="alice")
    assert _code(bob_url) == "ResourceNotFound"
    alice.delete_app(DomainId=domain_id, UserProfileName="alice", **APP)
    wait_for(lambda: _status(alice, domain_id, "alice") == "Deleted", "alice's app Deleted", 180)


def test_a_key_an_administrator_made_for_a_user_opens_their_app_only_where_impersonation_is_allowed(
    sm_client: Any, issue_keys: Any, seed: Any, apps_client: Any
) -> None:
    admin = sm_client(issue_keys("system", "root", "admin"))
    closed = admin.create_domain(DomainName="imp-off", AuthMode="IAM", DefaultUserSettings={})["DomainId"]
    made_for_alice = sm_client(issue_keys("imp-off", "alice", token=seed.admin_token))
    with pytest.raises(ClientError) as refused:  # as a token made by an admin: impersonation, off
        made_for_alice.create_presigned_domain_url(DomainId=closed, UserProfileName="alice")
    assert _code(refused) == "AccessDeniedException" and "impersonation" in str(refused.value)

    opened = admin.create_domain(DomainName="imp-on", AuthMode="IAM", DefaultUserSettings={})["DomainId"]
    allow = {"settings": {"allow_impersonation": True}}
    assert apps_client.patch("/api/v1/domains/imp-on", json=allow, headers=auth(seed.admin_token)).is_success
    carol = sm_client(issue_keys("imp-on", "carol"))
    carol.create_app(DomainId=opened, UserProfileName="carol", **APP)
    wait_for(lambda: _status(carol, opened, "carol") == "InService", "carol's app InService", 180)
    made_for_carol = sm_client(issue_keys("imp-on", "carol", token=seed.admin_token))
    link = made_for_carol.create_presigned_domain_url(DomainId=opened, UserProfileName="carol")
    assert "token=" in link["AuthorizedUrl"]
    # SageMaker's portal pattern: an administrator's own key, for the user's profile, where allowed...
    portal = admin.create_presigned_domain_url(DomainId=opened, UserProfileName="carol")
    assert apps_client.get(portal["AuthorizedUrl"], follow_redirects=False).status_code in (302, 303, 307)
    # ... and where not, the refusal names the setting that would allow it.
    admin.create_user_profile(DomainId=closed, UserProfileName="dave")
    with pytest.raises(ClientError) as closed_portal:
        admin.create_presigned_domain_url(DomainId=closed, UserProfileName="dave")
    assert _code(closed_portal) == "AccessDeniedException" and "allow_impersonation" in str(
        closed_portal.value
    )
    audit = apps_client.get("/api/v1/audit?action=OpenApp", headers=auth(seed.admin_token)).json()["items"]
    opened_rows = [e for e in audit if e["outcome"] == "success"]
    assert [(e["actor"], e["detail"]) for e in opened_rows] == [
        ("system/root", {"impersonation": True, "as": "imp-on/carol", "via": "sagemaker"}),
        # the seed's platform admin
        ("system/admin", {"impersonation": True, "as": "imp-on/carol", "via": "sagemaker"}),
    ]
    # the refused attempts are audited too (F9): the closed domain's portal and alice's admin-made key
    refused_rows = [e for e in audit if e["outcome"] == "denied"]
    assert [e["actor"] for e in refused_rows] == ["system/root", "imp-off/alice"]
    assert all("allow_impersonation" in e["detail"]["reason"] for e in refused_rows)
    carol.delete_app(DomainId=opened, UserProfileName="carol", **APP)
    wait_for(lambda: _status(carol, opened, "carol") == "Deleted", "carol's app Deleted", 180)


def test_the_aws_cli_lists_domains_and_creates_an_app(
    sagemaker_hub: Any, issue_keys: Any, tmp_path: Any
) -> None:
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    keys = issue_keys("system", "root", "admin")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PROFILERHUB_"))}
    env.update(
        AWS_ACCESS_KEY_ID=keys.access_key_id,
        AWS_SECRET_ACCESS_KEY=keys.secret_access_key,
        AWS_DEFAULT_REGION="us-east-1",
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
    )
    aws = Path(sys.executable).with_name("aws")
    endpoint = f"{sagemaker_hub.state.url}/sagemaker"

    def run(*args: str) -> Any:
        done = subprocess.run(
            [str(aws), "sagemaker", *args, "--endpoint-url", endpoint, "--output", "json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout) if done.stdout.strip() else {}

    domain = run(
        "create-domain", "--domain-name", "cli", "--auth-mode", "IAM", "--default-user-settings", "{}"
    )
    names = [d["DomainName"] for d in run("list-domains")["Domains"]]
    assert sorted(names) == ["cli", "system"]
    run("create-user-profile", "--domain-id", domain["DomainId"], "--user-profile-name", "carol")
    app = run(
        "create-app",
        "--domain-id",
        domain["DomainId"],
        "--user-profile-name",
        "carol",
        "--app-type",
        "DetailedProfiler",
        "--app-name",
        "default",
    )
    assert app["AppArn"].endswith("/carol/detailedprofiler/default")
    listed = run("list-apps", "--domain-id-equals", domain["DomainId"])["Apps"]
    assert [a["UserProfileName"] for a in listed] == ["carol"]


def _raw(hub: Any, keys: Keys | None, target: str, body: bytes) -> Any:
    """POST ``body`` to /sagemaker/ as botocore would, signed with ``keys`` (unsigned when None),
    without the client-side validation boto3 does first: what the hub checks itself."""
    import httpx
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    url = f"{hub.state.url}/sagemaker/"
    headers = {"X-Amz-Target": target, "Content-Type": "application/x-amz-json-1.1"}
    request = AWSRequest("POST", url, data=body, headers=headers)
    if keys is not None:
        SigV4Auth(Credentials(keys.access_key_id, keys.secret_access_key), "sagemaker", "eu-west-1").add_auth(
            request
        )
    return httpx.post(url, content=body, headers=dict(request.headers.items()))


def test_the_hub_checks_requests_against_the_model_itself(sagemaker_hub: Any, issue_keys: Any) -> None:
    keys = issue_keys("system", "root", "admin")
    ok = _raw(sagemaker_hub, keys, "SageMaker.ListDomains", b"{}")
    assert ok.status_code == 200 and ok.headers["content-type"] == "application/x-amz-json-1.1"
    cases = [
        (keys, "SageMaker.ListDomains", b'{"Bogus": 1}', "ValidationException", "Unknown parameter"),
        (keys, "SageMaker.CreateDomain", b'{"DomainName": "x"}', "ValidationException", "AuthMode"),
        (keys, "SageMaker.ListApps", b'{"MaxResults": 1000}', "ValidationException", "MaxResults"),
        (keys, "SageMaker.ListApps", b'{"SortOrder": "Sideways"}', "ValidationException", "enum"),
        (keys, "SageMaker.DescribeDomain", b'{"DomainId": "D_1"}', "ValidationException", "pattern"),
        (keys, "SageMaker.ListDomains", b"{not json", "SerializationException", "JSON"),
        (keys, "SageMaker.CreateTrainingJob", b"{}", "UnknownOperationException", "not supported"),
        (keys, "SageMaker.NoSuchThing", b"{}", "UnknownOperationException", "Unknown operation"),
        (None, "SageMaker.ListDomains", b"{}", "MissingAuthenticationTokenException", "Missing"),
    ]
    for signed_with, target, body, code, words in cases:
        answer = _raw(sagemaker_hub, signed_with, target, body)
        assert answer.status_code in (400, 403), (target, body, answer.text)
        assert answer.json()["__type"] == code and words in answer.json()["message"], (target, answer.text)
