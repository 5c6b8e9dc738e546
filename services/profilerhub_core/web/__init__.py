"""Front-end files shared by the profiler app's pages and the hub's console (``base.css``).

Both servers mount this folder as ``…/static/base/``; neither may import the other's package.
"""

from pathlib import Path

SHARED_WEB = Path(__file__).parent

__all__ = ["SHARED_WEB"]
