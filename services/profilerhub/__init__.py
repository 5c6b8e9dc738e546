"""ProfilerHub's training-side SDK.

``import profilerhub as ph`` must stay cheap (no server dependencies, no torch import) because
it is imported by training scripts.  The public API is re-exported here.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
