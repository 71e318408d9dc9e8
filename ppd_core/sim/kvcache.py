"""The per-node KV prefix cache axis: what a node asks of its cache, and today's implementation.

``ConversationLRU`` keeps, per conversation, how many prompt tokens of its history a node still holds, and
evicts whole conversations least-recently-used first when a reservation needs room. Hits are whole vLLM
blocks (``BLOCK`` tokens). Cached tokens and reservations share the node's KV capacity: the node passes its
``budget`` (capacity minus reserved tokens) to every call that may evict.
"""
from __future__ import annotations

from collections import OrderedDict
from types import MappingProxyType
from typing import Callable, Mapping, Protocol

BLOCK = 16  # vLLM KV block size: prefix-cache hits are whole blocks


class KVCache(Protocol):
    tokens: int                       # tokens held by the cache

    def hit(self, conv: int, prompt: int) -> int: ...
    def take(self, conv: int) -> int: ...
    def restore(self, conv: int, tokens: int) -> None: ...
    def make_room(self, need: int, keep: int, budget: int) -> bool: ...
    def put(self, conv: int, tokens: int, budget: int) -> None: ...


class ConversationLRU:
    """conversation -> cached tokens, least recently used first."""

    __slots__ = ("capacity", "entries", "tokens")

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.entries: OrderedDict[int, int] = OrderedDict()
        self.tokens = 0

    def hit(self, conv: int, prompt: int) -> int:
        """Prompt tokens of ``conv`` found in the cache, in whole blocks."""
        return (min(self.entries.get(conv, 0), prompt) // BLOCK) * BLOCK

    def take(self, conv: int) -> int:
        """Remove ``conv``'s entry (its tokens turn into a reservation); returns its tokens (0 if none)."""
        entry = self.entries.pop(conv, 0)
        self.tokens -= entry
        return entry

    def restore(self, conv: int, tokens: int) -> None:
        """Put back an entry taken by ``take`` (as most recently used; a 0-token entry too)."""
        self.entries[conv] = tokens
        self.tokens += tokens

    def make_room(self, need: int, keep: int, budget: int) -> bool:
        """Evict LRU conversations (never ``keep``) until ``need`` tokens are free of ``budget``."""
        if budget - self.tokens >= need:
            return True
        for conv in list(self.entries):
            if conv == keep:
                continue
            self.tokens -= self.entries.pop(conv)
            if budget - self.tokens >= need:
                return True
        return budget - self.tokens >= need

    def put(self, conv: int, tokens: int, budget: int) -> None:
        """Cache ``tokens`` of ``conv`` (replacing its entry), evicting others if there is room to make."""
        self.tokens -= self.entries.pop(conv, 0)
        tokens = min(tokens, self.capacity)
        if self.make_room(tokens, conv, budget):
            self.entries[conv] = tokens
            self.tokens += tokens


KV_CACHES: Mapping[str, Callable[[int], KVCache]] = MappingProxyType({"conversation-lru": ConversationLRU})
