"""The suite's own service plumbing works against the real servers."""

from __future__ import annotations

import psycopg
import redis


def test_fresh_postgres_database_is_empty_and_private(fresh_postgres_url: str) -> None:
    dsn = fresh_postgres_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema='public'"
        ).fetchone()
        name = conn.execute("SELECT current_database()").fetchone()
    assert tables == (0,)
    assert name is not None and name[0].startswith("phtest_")


def test_redis_answers(redis_url: str) -> None:
    assert redis.Redis.from_url(redis_url).ping() is True


def test_s3_bucket_round_trips_over_http(s3_server: dict[str, str], s3_bucket: str) -> None:
    import boto3

    client = boto3.client("s3", endpoint_url=s3_server["endpoint_url"], region_name=s3_server["region"])
    client.put_object(Bucket=s3_bucket, Key="a/b.txt", Body=b"hello")
    assert client.get_object(Bucket=s3_bucket, Key="a/b.txt")["Body"].read() == b"hello"


def test_without_a_postgres_server_the_suite_starts_its_own_cluster() -> None:
    """The fallback a plain Python machine takes: initdb + pg_ctl on a free port."""
    import testservices

    url = testservices.start_private_postgres()
    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT current_database()").fetchone() == ("test",)
    assert any("started a private cluster" in line for line in testservices.REPORT)


def test_without_a_redis_server_the_suite_starts_redis_server_or_the_embedded_one() -> None:
    import testservices

    for embedded in (False, True):
        url = testservices.start_private_redis(embedded=embedded)
        client = redis.Redis.from_url(url)
        assert client.set("phtest:fallback", b"1") and client.get("phtest:fallback") == b"1"
