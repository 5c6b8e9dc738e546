"""Training metrics from the script's own output, the way SageMaker reads them from its logs.

:class:`TeeStream` replaces ``sys.stdout``/``sys.stderr``: every write goes to the original stream
first and unchanged, then each complete line is handed to ``on_line`` (the run keeps it for the
job's log) and matched against the metric definitions (the first group of a definition's regex is
the value).  Only writes made through ``sys.stdout``/``sys.stderr``
are seen; output written to the file descriptors directly (C extensions, subprocesses) is not.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any, TextIO

from ._config import MetricDefinition

#: A line longer than this is matched on its first part only: protects against endless lines.
_MAX_LINE = 64 * 1024


class TeeStream:
    """A text stream that passes everything through to ``wrapped`` and watches whole lines."""

    def __init__(
        self,
        wrapped: TextIO,
        source: str,
        definitions: tuple[MetricDefinition, ...],
        on_metric: Callable[[str, str, str], None],
        on_line: Callable[[str, str], None] | None = None,
    ) -> None:
        self._wrapped = wrapped
        self._source = source
        self._definitions = definitions
        self._on_metric = on_metric  # (name, value text, source)
        self._on_line = on_line  # (source, line)
        self._partial = ""
        self._lock = threading.Lock()
        self.active = True

    @property
    def wrapped(self) -> TextIO:
        return self._wrapped

    def write(self, s: str) -> int:
        n = self._wrapped.write(s)
        if self.active and isinstance(s, str) and s:
            with contextlib.suppress(Exception):  # never let metric parsing break a print()
                self._watch(s)
        return n

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def _watch(self, s: str) -> None:
        with self._lock:
            if "\n" not in s:
                if len(self._partial) < _MAX_LINE:
                    self._partial += s
                return
            *complete, self._partial = (self._partial + s).split("\n")
            self._partial = self._partial[:_MAX_LINE]
        for line in complete:
            self._match(line[:_MAX_LINE].rstrip("\r"))

    def _match(self, line: str) -> None:
        if self._on_line is not None:
            self._on_line(self._source, line)
        for d in self._definitions:
            m = d.regex.search(line)
            if m is not None:
                self._on_metric(d.name, m.group(1), self._source)

    def flush(self) -> None:
        self._wrapped.flush()

    def __getattr__(self, name: str) -> Any:
        # fileno, isatty, encoding, buffer, errors ... behave exactly as the wrapped stream's.
        return getattr(self._wrapped, name)
