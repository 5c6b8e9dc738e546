"""Front-end files shared by the profiler app's pages and the hub's console: ``base.css`` (theme,
frame, controls, tables, status badges) and ``common.js`` (the answer's error shape, DOM building,
times, badges, polling, the theme switch; each side's own ``common.js`` re-exports it).

Both servers mount this folder as ``…/static/base/``; neither may import the other's package.
"""

from pathlib import Path

SHARED_WEB = Path(__file__).parent

__all__ = ["SHARED_WEB"]
