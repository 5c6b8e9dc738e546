"""boto3's ``sagemaker`` client: tags on domains, user profiles and apps, and UpdateUserProfile.

Real parts as in ``test_hub_sagemaker_api``: uvicorn on a loopback port, botocore's signer and
parsers, the database, Redis, an app process started by the worker's lifecycle functions.
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.support.hub import wait_for
from tests.support.sagemaker import check_output

APP = {"AppType": "DetailedProfiler", "AppName": "default"}


def _code(error: pytest.ExceptionInfo[ClientError]) -> str:
    return str(error.value.response["Error"]["Code"])


def _tags(sm: Any, arn: str) -> dict[str, str]:
    pages = sm.get_paginator("list_tags").paginate(ResourceArn=arn)
    return {t["Key"]: t["Value"] for page in pages for t in check_output(sm, "ListTags", page)["Tags"]}


def test_tags_given_at_creation_are_listed_changed_and_deleted_on_domains_profiles_and_apps(
    sm_client: Any, issue_keys: Any, seed: Any
) -> None:
    sm = sm_client(issue_keys("system", "root", "admin"))
    domain = sm.create_domain(
        DomainName="tagged", AuthMode="IAM", DefaultUserSettings={}, Tags=[{"Key": "team", "Value": "vision"}]
    )
    domain_arn, domain_id = domain["DomainArn"], domain["DomainId"]
    user_arn = sm.create_user_profile(
        DomainId=domain_id, UserProfileName="alice", Tags=[{"Key": "cost-center", "Value": "42"}]
    )["UserProfileArn"]
    assert _tags(sm, domain_arn) == {"team": "vision"}
    assert _tags(sm, user_arn) == {"cost-center": "42"}

    added = check_output(
        sm,
        "AddTags",
        sm.add_tags(
            ResourceArn=domain_arn, Tags=[{"Key": "team", "Value": "nlp"}, {"Key": "env", "Value": ""}]
        ),
    )
    assert added["Tags"] == [{"Key": "team", "Value": "nlp"}, {"Key": "env", "Value": ""}]
    assert _tags(sm, domain_arn) == {"team": "nlp", "env": ""}  # a key once: the new value wins
    check_output(sm, "DeleteTags", sm.delete_tags(ResourceArn=domain_arn, TagKeys=["env", "never-set"]))
    assert _tags(sm, domain_arn) == {"team": "nlp"}

    alice = sm_client(issue_keys("tagged", "alice"))
    app_arn = alice.create_app(
        DomainId=domain_id, UserProfileName="alice", Tags=[{"Key": "run", "Value": "r1"}], **APP
    )["AppArn"]
    wait_for(
        lambda: (
            alice.describe_app(DomainId=domain_id, UserProfileName="alice", **APP)["Status"] == "InService"
        ),
        "alice's app InService",
        180,
    )
    alice.add_tags(ResourceArn=app_arn, Tags=[{"Key": "owner note", "Value": "héllo wörld"}])
    assert _tags(alice, app_arn) == {"run": "r1", "owner note": "héllo wörld"}
    assert _tags(alice, user_arn) == {"cost-center": "42"}  # her own profile: readable
    with pytest.raises(ClientError) as not_admin:  # but changing it is an administrator's
        alice.add_tags(ResourceArn=user_arn, Tags=[{"Key": "profilerhub:role", "Value": "admin"}])
    assert _code(not_admin) == "AccessDeniedException"

    alice.delete_app(DomainId=domain_id, UserProfileName="alice", **APP)
    assert _tags(alice, app_arn) == {}  # an app's tags go with its deletion
    wait_for(
        lambda: alice.describe_app(DomainId=domain_id, UserProfileName="alice", **APP)["Status"] == "Deleted",
        "alice's app Deleted",
        180,
    )
    sm.delete_user_profile(DomainId=domain_id, UserProfileName="alice")
    sm.delete_domain(DomainId=domain_id)
    with seed.session() as session:  # and a profile's and a domain's with theirs
        from profilerhub_core.db.models import ResourceTag

        assert session.query(ResourceTag).count() == 0


def test_list_tags_pages_and_the_limits_of_sagemaker_hold(
    sagemaker_hub: Any, sm_client: Any, issue_keys: Any
) -> None:
    sm = sm_client(issue_keys("system", "root", "admin"))
    arn = sm.create_domain(DomainName="many", AuthMode="IAM", DefaultUserSettings={})["DomainArn"]
    sm.add_tags(ResourceArn=arn, Tags=[{"Key": f"k{i:02}", "Value": str(i)} for i in range(30)])
    sm.add_tags(ResourceArn=arn, Tags=[{"Key": f"k{i:02}", "Value": str(i)} for i in range(30, 50)])
    with pytest.raises(sm.exceptions.ResourceLimitExceeded):  # 50 per resource
        sm.add_tags(ResourceArn=arn, Tags=[{"Key": "one-more", "Value": ""}])
    sm.add_tags(ResourceArn=arn, Tags=[{"Key": "k00", "Value": "changed"}])  # changing one is no new tag

    one_page = check_output(sm, "ListTags", sm.list_tags(ResourceArn=arn, MaxResults=50))
    assert len(one_page["Tags"]) == 50 and "NextToken" not in one_page
    sagemaker_hub.state.services.settings.default_page_size = 20  # without MaxResults: the hub's page size
    pages = list(sm.get_paginator("list_tags").paginate(ResourceArn=arn))
    assert [len(check_output(sm, "ListTags", p)["Tags"]) for p in pages] == [20, 20, 10]
    keys = [t["Key"] for p in pages for t in p["Tags"]]
    assert keys == [f"k{i:02}" for i in range(50)]  # in the order they were added
    assert pages[0]["Tags"][0] == {"Key": "k00", "Value": "changed"}
    with pytest.raises(ClientError) as bad_token:
        sm.list_tags(ResourceArn=arn, NextToken="not-a-token")
    assert _code(bad_token) == "ValidationException"

    refused = [
        ([{"Key": "aws:owner", "Value": "x"}], "reserved"),
        ([{"Key": "a", "Value": "1"}, {"Key": "a", "Value": "2"}], "unique"),
        ([{"Key": "semi;colon", "Value": "x"}], "pattern"),
        ([{"Key": "k", "Value": "v" * 257}], "256"),
    ]
    for tags, words in refused:
        with pytest.raises(ClientError) as error:
            sm.add_tags(ResourceArn=arn, Tags=tags)
        assert _code(error) == "ValidationException" and words in str(error.value), (tags, str(error.value))
    for resource_arn, code in [
        (arn.replace(":domain/", ":notebook-instance/"), "ValidationException"),
        (arn.replace(":000000000000:", ":111111111111:"), "ValidationException"),
        (arn[:-4] + "0000", "ResourceNotFound"),
        (arn.replace(":domain/", ":user-profile/") + "/nobody", "ResourceNotFound"),
        (arn.replace(":domain/", ":app/") + "/nobody/jupyterserver/default", "ResourceNotFound"),
    ]:
        with pytest.raises(ClientError) as missing:
            sm.list_tags(ResourceArn=resource_arn)
        assert _code(missing) == code, (resource_arn, str(missing.value))
    assert len(_tags(sm, arn)) == 50  # nothing refused changed anything


def test_the_role_tag_makes_and_unmakes_a_domain_administrator(sm_client: Any, issue_keys: Any) -> None:
    root = sm_client(issue_keys("system", "root", "admin"))
    domain_id = root.create_domain(DomainName="roles", AuthMode="IAM", DefaultUserSettings={})["DomainId"]
    user_arn = root.create_user_profile(DomainId=domain_id, UserProfileName="dana")["UserProfileArn"]
    dana = sm_client(issue_keys("roles", "dana"))
    with pytest.raises(ClientError) as before:
        dana.list_user_profiles(DomainIdEquals=domain_id)
    assert _code(before) == "AccessDeniedException"
    with pytest.raises(ClientError) as bad_role:
        root.add_tags(ResourceArn=user_arn, Tags=[{"Key": "profilerhub:role", "Value": "owner"}])
    assert _code(bad_role) == "ValidationException"

    root.add_tags(ResourceArn=user_arn, Tags=[{"Key": "profilerhub:role", "Value": "admin"}])
    promoted = sm_client(issue_keys("roles", "dana", "admin"))  # a fresh key: no cached caller
    names = [
        u["UserProfileName"] for u in promoted.list_user_profiles(DomainIdEquals=domain_id)["UserProfiles"]
    ]
    assert names == ["dana"]
    root.delete_tags(ResourceArn=user_arn, TagKeys=["profilerhub:role"])
    demoted = sm_client(issue_keys("roles", "dana"))
    with pytest.raises(ClientError) as after:
        demoted.list_user_profiles(DomainIdEquals=domain_id)
    assert _code(after) == "AccessDeniedException"


def test_update_user_profile_stores_its_settings_and_moves_the_sign_in_to_the_landing_app(
    sm_client: Any, issue_keys: Any
) -> None:
    root = sm_client(issue_keys("system", "root", "admin"))
    domain_id = root.create_domain(DomainName="upd", AuthMode="IAM", DefaultUserSettings={})["DomainId"]
    root.create_user_profile(
        DomainId=domain_id,
        UserProfileName="erin",
        UserSettings={"ExecutionRole": "arn:aws:iam::111122223333:role/r"},
    )
    before = check_output(
        root, "DescribeUserProfile", root.describe_user_profile(DomainId=domain_id, UserProfileName="erin")
    )
    assert before["UserSettings"] == {"ExecutionRole": "arn:aws:iam::111122223333:role/r"}
    assert before["LastModifiedTime"] == before["CreationTime"]

    answer = root.update_user_profile(
        DomainId=domain_id,
        UserProfileName="erin",
        UserSettings={"DefaultLandingUri": "app:DetailedProfiler:", "SecurityGroups": ["sg-1"]},
    )
    assert check_output(root, "UpdateUserProfile", answer)["UserProfileArn"].endswith("/erin")
    after = check_output(
        root, "DescribeUserProfile", root.describe_user_profile(DomainId=domain_id, UserProfileName="erin")
    )
    assert after["UserSettings"] == {  # members given replace theirs; the others stay
        "ExecutionRole": "arn:aws:iam::111122223333:role/r",
        "DefaultLandingUri": "app:DetailedProfiler:",
        "SecurityGroups": ["sg-1"],
    }
    assert after["LastModifiedTime"] > before["LastModifiedTime"]

    with pytest.raises(ClientError) as bad_landing:
        root.update_user_profile(
            DomainId=domain_id,
            UserProfileName="erin",
            UserSettings={"DefaultLandingUri": "app:JupyterServer:"},
        )
    assert _code(bad_landing) == "ValidationException" and "Landing URI" in str(bad_landing.value)
    erin = sm_client(issue_keys("upd", "erin"))
    with pytest.raises(ClientError) as own:  # a user does not update their own profile
        erin.update_user_profile(DomainId=domain_id, UserProfileName="erin", UserSettings={})
    assert _code(own) == "AccessDeniedException"
    with pytest.raises(ClientError) as no_app:  # the landing app is what the sign-in needs
        erin.create_presigned_domain_url(DomainId=domain_id, UserProfileName="erin")
    assert _code(no_app) == "ResourceNotFound"
    unchanged = root.describe_user_profile(DomainId=domain_id, UserProfileName="erin")
    assert unchanged["UserSettings"] == after["UserSettings"]
