"""Layer 3: the conversations a run serves - synthetic cells, chat-dataset models and imported traces."""
from __future__ import annotations

from ..config.accel import extend
from ..config.lazy import lazy_exports

extend(__name__, __path__)    # the compiled build's modules first, when it is used (config/accel.py)

# imported on first use: a module that needs only ``Conversation`` does not load numpy (issue #13)
__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    ".conversation": ("Conversation", "Turn"),
    ".synthetic": ("arrival_times", "generate", "streams"),
})
