"""Layer 3: the conversations a run serves - synthetic cells, chat-dataset models and imported traces."""
from __future__ import annotations

from .conversation import Conversation, Turn
from .synthetic import arrival_times, generate, streams

__all__ = ["Conversation", "Turn", "arrival_times", "generate", "streams"]
