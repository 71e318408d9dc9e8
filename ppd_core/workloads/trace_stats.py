"""What a trace import found and assumed (``TraceStats``), and its text for the CLI and the dashboard."""
from __future__ import annotations

from dataclasses import dataclass

from .trace_common import MIN_SHARED_BLOCKS


@dataclass(frozen=True)
class TraceStats:
    """What an import found and assumed; ``describe()`` is the text the CLI prints (and the dashboard can show).

    ``continuations`` = requests - conversations (requests that are a later turn). Mooncake only:
    ``first_block_only`` counts requests that share their first hash id, and nothing longer, with earlier
    requests (the shared system-prompt block) and so start their own conversation; ``length_rejected`` counts
    requests whose hash ids extend an open conversation's full blocks but whose input is shorter than that
    conversation's last input + output (not merged). ``native_qps``: conversation arrivals per second of the
    timestamped conversations, ``(n - 1) / span``; None without timestamps or with a zero span.
    """
    source: str
    format: str
    requests: int
    conversations: int
    continuations: int
    multi_turn: int
    max_turns: int
    time_unit: str | None             # s | ms | us, None without timestamps
    time_unit_note: str               # how the unit was chosen (given, documented, header)
    arrival_span_s: float | None
    native_qps: float | None
    block_tokens: int | None = None   # Mooncake only
    block_note: str = ""
    first_block_only: int | None = None
    length_rejected: int | None = None

    def describe(self) -> str:
        """A few lines: counts, the grouping rule (Mooncake), the time unit and the trace's own rate."""
        lines = [f"trace {self.source} ({self.format}): {self.requests:,} requests -> {self.conversations:,} "
                 f"conversations ({self.continuations:,} continuations, {self.multi_turn:,} multi-turn, "
                 f"up to {self.max_turns} turns)"]
        if self.format == "mooncake":
            lines.append(f"  rule: a request continues the open conversation whose last request's full "
                         f"{self.block_tokens}-token blocks (at least {MIN_SHARED_BLOCKS}) are a prefix of its "
                         "hash_ids and whose last input + output its input covers (longest prefix, then most "
                         f"recent); block size {self.block_note}")
            lines.append(f"  not merged: {self.first_block_only:,} requests share only the first block (a common "
                         f"system prompt) with earlier requests; {self.length_rejected:,} extend an open "
                         "conversation's blocks but are shorter than its last input + output")
        if self.time_unit is None:
            lines.append(f"  no timestamps: Poisson arrivals at the scenario's qps{self.time_unit_note}")
        else:
            rate = "" if self.native_qps is None else f", {self.native_qps:.4g} conv/s"
            span = "" if self.arrival_span_s is None else f"; arrivals span {self.arrival_span_s:,.1f} s{rate}"
            lines.append(f"  timestamps in {self.time_unit} ({self.time_unit_note}){span}")
        return "\n".join(lines)
