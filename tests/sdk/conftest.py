"""Fixtures for the SDK tests: the FakeHub stand-in, a clean SDK state, torch imported once."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from types import ModuleType

import pytest

import profilerhub as ph

from .fakehub import FakeHub


@pytest.fixture(autouse=True)
def _no_run_left_behind() -> Iterator[None]:
    """Every test starts and ends without a current run (a failing test must not leak one)."""
    ph.finish(timeout=2)
    yield
    ph.finish(timeout=2)


@pytest.fixture(scope="session")
def torch() -> ModuleType:
    """torch, imported once for the session (it takes seconds)."""
    import torch

    torch.set_num_threads(1)
    return torch


@pytest.fixture
def fakehub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """A running FakeHub (stand-in for the hub's job routes); PROFILERHUB_URL/TOKEN point at it."""
    hub = FakeHub()
    hub.start()
    monkeypatch.setenv("PROFILERHUB_URL", hub.url)
    monkeypatch.setenv("PROFILERHUB_TOKEN", hub.token)
    yield hub
    hub.stop()


@pytest.fixture
def sdk_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """caplog collecting the ``profilerhub`` logger at INFO and above."""
    caplog.set_level(logging.INFO, logger="profilerhub")
    return caplog


def sdk_records(caplog: pytest.LogCaptureFixture, level: int = logging.WARNING) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "profilerhub" and r.levelno >= level]
