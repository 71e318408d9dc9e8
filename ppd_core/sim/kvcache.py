"""The per-node KV prefix cache axis: what a node asks of its cache, and the vLLM V1-like implementation.

Memory is counted in vLLM KV blocks of ``BLOCK`` tokens. A node's blocks are either held by its running
requests, held by the prefix cache, or free (``free + used + cached == capacity``). The cache only holds
blocks no running request uses (a request *takes* its conversation's cached blocks when it is admitted and
*puts* the blocks the next turn can reuse back when it ends), so every cached block is evictable.

``BlockLRU`` is vLLM V1's prefix cache seen per conversation: a conversation's cached history is a chain
of full blocks from the start of its prompt. Freed blocks join the free queue tail first, so eviction
takes the **tail** blocks of the least recently used conversation first: a partly evicted history still
hits its head. A hit is the cached chain's head that the new prompt covers, in whole blocks.
"""
from __future__ import annotations

from collections import OrderedDict
from types import MappingProxyType
from typing import Callable, Final, Mapping, Protocol

BLOCK: Final = 16  # vLLM KV block size: memory is allocated and prefix-cache hits are counted in whole blocks


def blocks_for(tokens: int) -> int:
    """KV blocks that hold ``tokens`` tokens."""
    return -(-tokens // BLOCK)


class KVCache(Protocol):
    blocks: int                       # blocks held by the cache (all evictable)

    def hit(self, conv: int, prompt: int) -> int: ...
    def take(self, conv: int) -> int: ...
    def put(self, conv: int, blocks: int) -> None: ...
    def evict(self, need: int) -> int: ...


class BlockLRU:
    """conversation -> cached head blocks of its history, least recently used conversation first."""

    __slots__ = ("entries", "blocks", "evicted")

    def __init__(self) -> None:
        self.entries: OrderedDict[int, int] = OrderedDict()
        self.blocks = 0
        self.evicted = 0                  # blocks evicted so far (a counter for reports and tests)

    def hit(self, conv: int, prompt: int) -> int:
        """Prompt tokens of ``conv`` found in the cache: the cached head, in whole blocks."""
        cached, whole = self.entries.get(conv, 0) * BLOCK, (prompt // BLOCK) * BLOCK
        return cached if cached < whole else whole

    def take(self, conv: int) -> int:
        """Remove ``conv``'s cached blocks (they turn into a running request's blocks); returns how many."""
        n = self.entries.pop(conv, 0)
        self.blocks -= n
        return n

    def put(self, conv: int, blocks: int) -> None:
        """Cache ``blocks`` head blocks of ``conv``, freed by a request (most recently used); replaces its
        entry. The caller frees the blocks it puts here, so the node's total never grows."""
        self.blocks -= self.entries.pop(conv, 0)
        if blocks > 0:
            self.entries[conv] = blocks
            self.blocks += blocks

    def evict(self, need: int) -> int:
        """Evict up to ``need`` blocks, tail first, least recently used conversation first; returns how many."""
        done = 0
        entries = self.entries
        while done < need and entries:
            conv = next(iter(entries))
            n = entries[conv]
            cut = min(n, need - done)
            if cut == n:
                del entries[conv]
            else:
                entries[conv] = n - cut       # the head stays, and keeps its place in the LRU order
            done += cut
        self.blocks -= done
        self.evicted += done
        return done


KV_CACHES: Mapping[str, Callable[[], KVCache]] = MappingProxyType({"block-lru": BlockLRU})
