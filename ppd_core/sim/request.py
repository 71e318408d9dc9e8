"""A request is one turn of one conversation as it moves through the cluster."""
from __future__ import annotations

from typing import Final

# Paths a request can take (the paper's names).
PD: Final = "pd"
LOCAL: Final = "local"
REPLICA: Final = "replica"
# Final states.
OK: Final = "ok"
TIMEOUT: Final = "timeout"
REJECTED: Final = "rejected"
UNFINISHED: Final = "unfinished"


class Request:
    """Mutable per-request state owned by the simulator (``__slots__`` for speed: thousands per run)."""

    __slots__ = ("rid", "conv", "turn", "sent", "new_input", "output", "prompt", "path", "prefill_node",
                 "decode_node", "cached", "prefill_tokens", "kv_bytes", "first_token", "finish", "status",
                 "aborted", "remaining_prefill", "done_prefill", "full_prefill", "join_step",
                 "reserved_on", "where", "prefill_done_at", "transfer_done_at", "blocks_decode", "created",
                 "est", "gen", "base", "seq", "recompute", "preemptions", "inv_output")

    def __init__(self, rid: int, conv: int, turn: int, sent: float, new_input: int, output: int, prompt: int):
        self.rid = rid
        self.conv = conv
        self.turn = turn                # 1-based
        self.created = sent             # the client made the request (Turn 1: the conversation's arrival)
        self.sent = sent                # it left the client (later than created only while waiting for a slot)
        self.new_input = new_input
        self.output = output
        self.inv_output = 1.0 / max(output, 1)   # Eq.1's dTPOT sums it over a decode batch
        self.prompt = prompt            # prompt tokens = history + new input
        self.path = ""
        self.prefill_node = -1
        self.decode_node = -1
        self.cached = 0                 # prompt tokens found in the serving node's prefix cache
        self.prefill_tokens = 0         # tokens actually prefilled (on P for the PD path)
        self.kv_bytes = 0               # KV bytes moved P -> D
        self.first_token = -1.0
        self.finish = -1.0
        self.status = UNFINISHED
        self.aborted = False
        self.remaining_prefill = 0      # tokens still to prefill on the node currently holding it
        self.done_prefill = 0           # context already in KV on that node (cached + prefilled so far)
        self.full_prefill = False       # prefill started with no cached context (a "full" prefill)
        self.join_step = 0              # decode step count of its node when it joined the decode batch
        self.reserved_on: list[int] = []           # node ids holding a KV reservation for this request
        self.where = ""                 # coarse location, for debugging and aborts
        self.prefill_done_at = -1.0
        self.transfer_done_at = -1.0
        self.blocks_decode = False      # its inbound transfer pauses the decode node's batch
        self.est: dict[str, float] | None = None                 # Turn 2+ on a D node: the Eq.1 estimates it was decided on (dict)
        self.gen = 0                    # output tokens generated so far (a preempted request resumes there)
        self.base = 0                   # decoding: KV slots it needs to run its node's decode step s = base + s
        self.seq = 0                    # admission order on its node (the preemption victim is the latest)
        self.recompute = False          # preempted: re-prefills prompt + generated tokens locally
        self.preemptions = 0
