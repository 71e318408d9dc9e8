"""vLLM V1's cascade-attention decision (whether a batch's shared prefix is read once or per request)."""
from __future__ import annotations

import math

from .checks import num

BLOCK_TOKENS = 16   # vLLM V1 KV block size: the common prefix is counted in whole blocks


def cascade_used(common_prefix, num_reqs, all_decode: bool, heads, kv_heads, num_sms=132) -> bool:
    """Transcription of ``use_cascade_attention`` (vllm/v1/attention/backends/flash_attn.py): cascade needs a
    common prefix of >= 256 tokens over all running requests and >= 8 requests; for a pure-decode step with
    GQA (FlashDecoding available) it is used only if its estimated waves beat FlashDecoding's."""
    P = num("common_prefix", common_prefix)
    R = num("num_reqs", num_reqs, integer=True)
    H = num("heads", heads, positive=True, integer=True)
    K = num("kv_heads", kv_heads, positive=True, integer=True)
    S = num("num_sms", num_sms, positive=True, integer=True)
    if P < 256 or R < 8:
        return False
    qpk = H // K
    if not (qpk > 1 and all_decode):
        return True
    tiles = math.ceil(P / 128)
    cascade_time = math.ceil(H * math.ceil(R / 128) / S) * tiles
    fd_time = math.ceil(R * K * math.ceil(qpk / 128) * tiles / S)
    return cascade_time < fd_time
