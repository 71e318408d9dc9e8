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


NAN: Final = float("nan")
#: the keys of ``Request.est`` that are recorded (``estimate.estimate`` makes the dict)
EST_KEYS: Final = ("ttft_local", "ttft_pd", "d_ttft", "d_tpot", "score")
#: what ``columns`` reads from every request (``est_<key>``: the Eq.1 estimate it was decided on, NaN without;
#: ``client_wait_ms``: NaN for a request never sent)
COLUMNS: Final = ("conv", "turn", "path", "prefill_node", "decode_node", "created", "sent", "first_token", "finish",
                  "new_input", "prompt", "cached", "prefill_tokens", "output", "kv_bytes", "preemptions", "status",
                  "client_wait_ms", *["est_" + key for key in EST_KEYS])


def columns(requests: list[Request]) -> dict[str, list]:
    """The fields the metrics layer records, a list per name of ``COLUMNS``, requests in (conversation, turn)
    order: read here, compiled with the engine, where reading a request's fields is native (the metrics layer
    only turns the lists into arrays)."""
    reqs = sorted(requests, key=lambda r: (r.conv, r.turn))
    ests = [r.est for r in reqs]
    return dict(zip(COLUMNS, [
        [r.conv for r in reqs], [r.turn for r in reqs], [r.path for r in reqs], [r.prefill_node for r in reqs],
        [r.decode_node for r in reqs], [r.created for r in reqs], [r.sent for r in reqs],
        [r.first_token for r in reqs], [r.finish for r in reqs], [r.new_input for r in reqs],
        [r.prompt for r in reqs], [r.cached for r in reqs], [r.prefill_tokens for r in reqs],
        [r.output for r in reqs], [r.kv_bytes for r in reqs], [r.preemptions for r in reqs],
        [r.status for r in reqs], [(r.sent - r.created) * 1e3 if r.path else NAN for r in reqs],
        *[[e[key] if e is not None else NAN for e in ests] for key in EST_KEYS],
    ], strict=True))
