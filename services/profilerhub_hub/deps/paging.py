"""Paging: ``PageDep`` (``limit`` and ``next_token``) and the one way a list route fetches a page."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import sqlalchemy as sa
from fastapi import Depends, Query
from sqlalchemy.orm import InstrumentedAttribute, Session

from profilerhub_core.errors import InvalidInput
from profilerhub_core.pagination import paginate
from profilerhub_hub.deps.session import SettingsDep
from profilerhub_hub.schemas import Page

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class PageParams:
    """``limit`` and ``next_token`` of a list request, and the key that signs page tokens."""

    limit: int
    next_token: str | None
    key: bytes

    def fetch(
        self,
        session: Session,
        stmt: sa.Select[Any],
        order: Sequence[InstrumentedAttribute[Any]],
        read: Callable[[Any], T],
        *,
        scope: str,
        descending: bool = False,
    ) -> Page[T]:
        """One page of ``stmt`` ordered by ``order``, each row turned into a schema by ``read``."""
        return self.fetch_rows(
            session, stmt, order, lambda rows: [read(row) for row in rows], scope=scope, descending=descending
        )

    def fetch_rows(
        self,
        session: Session,
        stmt: sa.Select[Any],
        order: Sequence[InstrumentedAttribute[Any]],
        read: Callable[[list[Any]], list[T]],
        *,
        scope: str,
        descending: bool = False,
    ) -> Page[T]:
        """Like ``fetch``, with the page's rows turned into schemas together (one query for all)."""
        result = paginate(
            session,
            stmt,
            order,
            limit=self.limit,
            next_token=self.next_token,
            key=self.key,
            scope=scope,
            descending=descending,
        )
        return Page[T](items=read(list(result.items)), next_token=result.next_token)


async def get_page(
    settings: SettingsDep,
    limit: Annotated[
        int | None, Query(ge=1, description="Items per page (default and maximum in settings).")
    ] = None,
    next_token: Annotated[str | None, Query(max_length=2000, description="From the previous page.")] = None,
) -> PageParams:
    if limit is not None and limit > settings.max_page_size:
        raise InvalidInput(f"limit must be at most {settings.max_page_size}")
    return PageParams(limit or settings.default_page_size, next_token or None, settings.signing_key())


PageDep = Annotated[PageParams, Depends(get_page)]


__all__ = ["PageDep", "PageParams"]
