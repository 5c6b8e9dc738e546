"""The SDK's one native helper, ``_native_reduce.c``: compiled once per machine, loaded with ctypes.

``ph.watch``'s reductions of a CPU tensor in torch take a dozen passes and a dozen calls per
tensor (each 5-30 µs on the caches a training step leaves cold), and its histogram's ``bincount``
alone was most of a saved step. The C file does a tensor's statistics and histogram in one pass,
its bins folded too, for every tensor of a call at once (``ph_reduce_f32``: whole rows). As
torch's Inductor does with its kernels, it is compiled on first use with the machine's C compiler
(``$CC``, else ``cc``) into the user's cache (``$PROFILERHUB_NATIVE_CACHE``, else
``$XDG_CACHE_HOME/profilerhub`` or ``~/.cache/profilerhub``), under a name that hashes the
source, the flags and the compiler, written to a temporary name and renamed (processes that
compile at once never load half a file). No compiler, a failed build or ``PROFILERHUB_NATIVE=0``:
``lib()`` is ``None`` and ``_reduce`` keeps its torch path, which gives the same rows (a test
checks both).
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from ._log import logger

SOURCE = Path(__file__).with_name("_native_reduce.c")
FLAGS = (
    "-O3",
    "-fPIC",
    "-shared",
    # What lets the block sums be vectorised, and nothing more: no -ffast-math, whose
    # crtfastmath.o would set flush-to-zero for the whole training process.
    "-fno-math-errno",
    "-fno-trapping-math",
    "-fassociative-math",
    "-fno-signed-zeros",
)
COMPILE_TIMEOUT_S = 60.0

_lock = threading.Lock()
_loaded: list[ctypes.CDLL | None] = []  # [] until tried once, then [lib or None]


def lib() -> ctypes.CDLL | None:
    """The loaded library (``ph_reduce_f32`` typed), compiled first if not cached; ``None`` where
    it cannot be (said once in the log, at debug level when switched off on purpose)."""
    if _loaded:
        return _loaded[0]
    with _lock:
        if not _loaded:
            _loaded.append(_load())
    return _loaded[0]


def _load() -> ctypes.CDLL | None:
    if os.environ.get("PROFILERHUB_NATIVE", "1").strip().lower() in ("0", "false", "no", "off"):
        logger.debug("profilerhub: PROFILERHUB_NATIVE=0: tensor reductions in torch")
        return None
    try:
        path = _build()
        if path is None:
            return None
        found = ctypes.CDLL(str(path))
        fn = found.ph_reduce_f32
        fn.restype = None
        fn.argtypes = [
            ctypes.c_int64,
            ctypes.POINTER(ctypes.c_void_p),
            ctypes.POINTER(ctypes.c_int64),
            ctypes.POINTER(ctypes.c_int32),
            ctypes.c_int64,
            ctypes.c_void_p,
        ]
        return found
    except Exception as exc:  # never into the training loop: the torch path stays
        logger.warning("profilerhub: native reductions unavailable (%s); using torch's", exc)
        return None


def cache_dir() -> Path:
    own = os.environ.get("PROFILERHUB_NATIVE_CACHE")
    if own:
        return Path(own)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "profilerhub"


def _build() -> Path | None:
    cc = os.environ.get("CC") or "cc"
    compiler = shutil.which(cc)
    if compiler is None:
        logger.info("profilerhub: no C compiler (%s) found: tensor reductions in torch (slower)", cc)
        return None
    source = SOURCE.read_bytes()
    key = hashlib.sha256(b"\0".join([source, " ".join(FLAGS).encode(), compiler.encode(),
                                     platform.machine().encode()])).hexdigest()[:16]  # fmt: skip
    target = cache_dir() / f"native_reduce-{key}.so"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".native_reduce-", suffix=".so", dir=target.parent)
    os.close(fd)
    try:
        done = subprocess.run(
            [compiler, *FLAGS, "-o", tmp, str(SOURCE), "-lm"],
            capture_output=True,
            text=True,
            timeout=COMPILE_TIMEOUT_S,
            check=False,
        )
        if done.returncode != 0:
            logger.log(
                logging.WARNING,
                "profilerhub: compiling %s failed (%s); tensor reductions in torch (slower)",
                SOURCE.name,
                done.stderr.strip()[-500:],
            )
            return None
        os.replace(tmp, target)
        return target
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
