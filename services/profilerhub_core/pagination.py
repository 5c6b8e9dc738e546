"""Keyset pagination with opaque, tamper-proof ``next_token`` values.

A page token is the sort key of the last item returned, bound to the listing it came from (its
``scope``: path and filters) and signed with HMAC-SHA256 under the hub's secret key. A token that
was altered, forged or taken from another listing is refused with ``InvalidInput``.

    page = paginate(session, select(Domain), [Domain.name], limit=50, next_token=tok,
                    key=settings.signing_key(), scope="domains")
    page.items, page.next_token
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

import sqlalchemy as sa
from sqlalchemy.orm import InstrumentedAttribute, Session

from profilerhub_core.errors import InvalidInput

T = TypeVar("T")
_SIG_BYTES = 16


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: list[T]
    next_token: str | None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _encode_value(value: Any) -> Any:
    return {"dt": value.isoformat()} if isinstance(value, datetime) else value


def _decode_value(value: Any) -> Any:
    return datetime.fromisoformat(value["dt"]) if isinstance(value, dict) else value


def _sign(key: bytes, scope: str, payload: bytes) -> bytes:
    return hmac.new(key, scope.encode() + b"\0" + payload, hashlib.sha256).digest()[:_SIG_BYTES]


def encode_page_token(key: bytes, scope: str, values: Sequence[Any]) -> str:
    payload = json.dumps([_encode_value(v) for v in values], separators=(",", ":")).encode()
    return f"{_b64(payload)}.{_b64(_sign(key, scope, payload))}"


def decode_page_token(key: bytes, scope: str, token: str) -> list[Any]:
    """The sort key in ``token``; ``InvalidInput`` when it is not one this listing issued."""
    try:
        body, signature = token.split(".", 1)
        payload = _unb64(body)
        # Compare the text: base64 decoding ignores the padding bits of the last character.
        valid = hmac.compare_digest(signature, _b64(_sign(key, scope, payload)))
        values = json.loads(payload) if valid else None
    except (ValueError, UnicodeDecodeError):
        values = None
    if not isinstance(values, list):
        raise InvalidInput("next_token is not valid for this request; repeat the request without it")
    return [_decode_value(v) for v in values]


def _nullable(column: InstrumentedAttribute[Any]) -> bool:
    return bool(getattr(column.expression, "nullable", False))


def _after(columns: Sequence[InstrumentedAttribute[Any]], values: Sequence[Any], descending: bool) -> Any:
    """(c1, c2, ...) > (v1, v2, ...) spelled out, so each value binds with its column's type.

    A nullable column sorts its nulls last in either direction (see ``_ordering``): after a value
    come the greater (or smaller) values and then the nulls; after a null, only the nulls."""
    clauses = []
    for i, column in enumerate(columns):
        equal = [columns[j].is_(None) if values[j] is None else columns[j] == values[j] for j in range(i)]
        if values[i] is None:
            continue  # nothing sorts after a null in its own column: only a later column moves on
        step = column < values[i] if descending else column > values[i]
        if _nullable(column):
            step = sa.or_(step, column.is_(None))
        clauses.append(sa.and_(*equal, step))
    return sa.or_(*clauses)


def _ordering(columns: Sequence[InstrumentedAttribute[Any]], descending: bool) -> list[Any]:
    """ORDER BY terms: nullable columns put nulls last (SQLite and PostgreSQL disagree otherwise);
    the others are left plain so an index scan in either direction still serves them."""
    terms = []
    for column in columns:
        term = column.desc() if descending else column.asc()
        terms.append(term.nulls_last() if _nullable(column) else term)
    return terms


def paginate(
    session: Session,
    stmt: sa.Select[Any],
    order: Sequence[InstrumentedAttribute[Any]],
    *,
    limit: int,
    next_token: str | None,
    key: bytes,
    scope: str,
    descending: bool = False,
) -> Page[Any]:
    """One page of ``stmt``'s single-entity rows, ordered by ``order`` (unique together; a
    nullable column's nulls come last in either direction)."""
    if next_token:
        values = decode_page_token(key, scope, next_token)
        if len(values) != len(order):
            raise InvalidInput("next_token is not valid for this request; repeat the request without it")
        stmt = stmt.where(_after(order, values, descending))
    rows = list(session.scalars(stmt.order_by(*_ordering(order, descending)).limit(limit + 1)))
    if len(rows) <= limit:
        return Page(rows, None)
    last = rows[limit - 1]
    token = encode_page_token(key, scope, [getattr(last, c.key) for c in order])
    return Page(rows[:limit], token)


__all__ = ["Page", "decode_page_token", "encode_page_token", "paginate"]
