"""Input checks of the latency-model functions: every numeric input is a real, finite, non-negative number
(positive, integer or within a range where asked); a bad one raises ``PhysicsInputError`` with one line
naming the input and what is allowed."""
from __future__ import annotations

import math

from ..config.errors import PPDError


class PhysicsInputError(PPDError):
    """A numeric input to a latency-model function is missing, non-finite, negative or out of range."""


def num(name: str, value, *, positive: bool = False, integer: bool = False, lo: float | None = None,
        hi: float | None = None) -> float:
    """Validate one numeric input: a real, finite number (no bool), >= 0 (> 0 if ``positive``), optionally an
    integer and within [lo, hi]. Returns it as float (int if ``integer``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        item = getattr(value, "item", None)          # numpy scalars are fine
        if callable(item) and type(value).__module__ == "numpy" and not isinstance(item(), bool):
            value = item()
        else:
            raise PhysicsInputError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise PhysicsInputError(f"{name} must be finite, got {value!r}")
    if positive and value <= 0:
        raise PhysicsInputError(f"{name} must be > 0, got {value!r}")
    if value < 0:
        raise PhysicsInputError(f"{name} must be >= 0, got {value!r}")
    if integer and value != int(value):
        raise PhysicsInputError(f"{name} must be an integer, got {value!r}")
    if lo is not None and value < lo:
        raise PhysicsInputError(f"{name} must be >= {lo}, got {value!r}")
    if hi is not None and value > hi:
        raise PhysicsInputError(f"{name} must be <= {hi}, got {value!r}")
    return int(value) if integer else float(value)


def chunk_list(chunks) -> list[tuple[int, int]]:
    """Prefill chunks as validated (new tokens, cached tokens) pairs; a third item (is_full) is ignored."""
    return [(num(f"chunks[{i}].new", c[0], integer=True), num(f"chunks[{i}].cached", c[1], integer=True))
            for i, c in enumerate(chunks)]
