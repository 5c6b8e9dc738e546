"""The ``/sagemaker`` door (an ASGI middleware ahead of FastAPI's router) keeps what every hub
answer has: the security headers, the body limit, the one-method rule, SageMaker's error shape.

In process (``TestClient``), on SQLite and PostgreSQL; boto3 over real HTTP is
``test_hub_sagemaker_api.py``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from profilerhub_core.db.models import AppType
from profilerhub_core.records import access_keys, apps, domains, users
from profilerhub_hub.sagemaker.model import domain_id

URL = "http://testserver/sagemaker/"


@pytest.fixture
def alice(client: Any, seed: Any) -> dict[str, str]:
    """alice of domain d1 with a Pending app: her access key and the domain's SageMaker id."""
    seed.user("d1", "alice")
    settings = client.app.state.services.settings
    with seed.session() as session:
        domain = domains.require_domain(session, "d1")
        user = users.get_user(session, domain, "alice")
        assert user is not None
        apps.create_user_app(session, domain, user, AppType.DetailedProfiler, "default")
        key, secret = access_keys.issue_access_key(session, user, settings.signing_key())
        session.commit()
        return {"key": key.prefix, "secret": secret, "domain_id": domain_id(domain)}


def _signed(keys: dict[str, str], operation: str, body: bytes) -> dict[str, str]:
    headers = {"X-Amz-Target": f"SageMaker.{operation}", "Content-Type": "application/x-amz-json-1.1"}
    request = AWSRequest("POST", URL, data=body, headers=headers)
    SigV4Auth(Credentials(keys["key"], keys["secret"]), "sagemaker", "us-east-1").add_auth(request)
    return dict(request.headers.items())


def _describe(keys: dict[str, str], app_name: str = "default") -> bytes:
    return json.dumps(
        {
            "DomainId": keys["domain_id"],
            "UserProfileName": "alice",
            "AppType": "DetailedProfiler",
            "AppName": app_name,
        }  # fmt: skip
    ).encode()


def test_a_describe_app_answer_carries_the_hubs_security_headers(client: Any, alice: dict[str, str]) -> None:
    body = _describe(alice)
    answer = client.post(URL, content=body, headers=_signed(alice, "DescribeApp", body))
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/x-amz-json-1.1"
    assert answer.json()["Status"] == "Pending" and answer.json()["UserProfileName"] == "alice"
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["x-frame-options"] == "DENY"


def test_a_missing_app_and_a_missing_user_are_sagemakers_resource_not_found(
    client: Any, alice: dict[str, str]
) -> None:
    for body in (_describe(alice, "other"), _describe(alice).replace(b'"alice"', b'"nobody"')):
        answer = client.post(URL, content=body, headers=_signed(alice, "DescribeApp", body))
        assert answer.status_code == 400 and answer.json()["__type"] == "ResourceNotFound", answer.text
        assert answer.headers["x-amzn-errortype"] == "ResourceNotFound"
        assert answer.headers["x-frame-options"] == "DENY"


def test_only_post_reaches_the_door_other_methods_get_405(client: Any) -> None:
    for path in ("/sagemaker", "/sagemaker/"):
        answer = client.get(path)
        assert answer.status_code == 405 and answer.headers["allow"] == "POST"
        assert answer.json()["error"]["code"] == "MethodNotAllowed"
    assert client.post("/sagemakers/").status_code == 404  # the door answers its own paths alone


def test_a_body_over_the_hubs_limit_is_413_with_or_without_a_content_length(
    client: Any, alice: dict[str, str]
) -> None:
    limit = client.app.state.services.settings.max_request_body_bytes
    huge = b'{"DomainNameEquals": "' + b"a" * limit + b'"}'
    headers = _signed(alice, "ListDomains", huge)
    assert client.post(URL, content=huge, headers=headers).status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit applies while reading
        for start in range(0, len(huge), 65536):
            yield huge[start : start + 65536]

    headers.pop("Content-Length", None)
    answer = client.post(URL, content=chunks(), headers=headers)
    assert answer.status_code == 413 and answer.json()["__type"] == "ValidationException", answer.text


def test_a_read_whose_body_was_validated_before_still_gets_params_of_its_own() -> None:
    from profilerhub_hub.sagemaker.endpoint import _parse

    body = b'{"DomainIdEquals": "d-' + b"0" * 32 + b'", "MaxResults": 5}'
    first = _parse("ListApps", body)
    first["MaxResults"] = 99  # an operation changing its params must not change the next request's
    first.pop("DomainIdEquals")
    assert _parse("ListApps", body) == {"DomainIdEquals": "d-" + "0" * 32, "MaxResults": 5}
    assert _parse("ListApps", body) is not _parse("ListApps", body)


def test_the_endpoint_variables_the_docs_name_send_boto3s_three_clients_to_the_hub(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """docs/sagemaker-api.md's variables, as botocore reads them: the logs client's is named after its
    service id ("CloudWatch Logs"), and its client name's (``AWS_ENDPOINT_URL_LOGS``) is ignored."""
    import boto3

    for name in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(name)
    hub = "http://hub.example:8080"
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER", f"{hub}/sagemaker")
    monkeypatch.setenv("AWS_ENDPOINT_URL_CLOUDWATCH", f"{hub}/cloudwatch")
    monkeypatch.setenv("AWS_ENDPOINT_URL_LOGS", f"{hub}/wrong")
    session = boto3.Session(aws_access_key_id="PHAK", aws_secret_access_key="s", region_name="us-east-1")
    assert session.client("logs").meta.endpoint_url == "https://logs.us-east-1.amazonaws.com"
    monkeypatch.setenv("AWS_ENDPOINT_URL_CLOUDWATCH_LOGS", f"{hub}/logs")
    session = boto3.Session(aws_access_key_id="PHAK", aws_secret_access_key="s", region_name="us-east-1")
    for service, path in (("sagemaker", "sagemaker"), ("cloudwatch", "cloudwatch"), ("logs", "logs")):
        assert session.client(service).meta.endpoint_url == f"{hub}/{path}"  # type: ignore[call-overload]
