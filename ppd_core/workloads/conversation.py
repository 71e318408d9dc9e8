"""A workload is a tuple of ``Conversation``s, each with an arrival time and its turns. Turn k's prompt is the
whole history (every earlier input and output) plus the turn's new input, as in the benchmarks."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Turn:
    new_input: int   # tokens the user adds this turn (Turn 1: the whole prompt)
    output: int      # tokens generated (exact: the benchmarks use ignore_eos)


@dataclass(frozen=True, slots=True)
class Conversation:
    cid: int
    arrival_s: float
    turns: tuple[Turn, ...]

    def prompt_len(self, k: int) -> int:
        """Prompt tokens of turn k (0-based): all earlier inputs and outputs plus this turn's input."""
        return sum(t.new_input + t.output for t in self.turns[:k]) + self.turns[k].new_input
