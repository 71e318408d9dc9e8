"""PD-path costs that scale with what they move.

The three PD-path constants were fitted on Llama-3.1-8B (32 layers, 131,072 KV B/token). For another model:

* ``pd_handoff_ms`` (P's 1-token response, the second HTTP hop): host work, unchanged;
* ``pd_us_per_token`` (the connector's per-layer receive of each prompt token's KV on D): x the KV
  bytes/token ratio (layers x kv_heads x head_dim);
* ``p_send_ms`` (P's step blocked in wait_for_save until every layer's KV is handed to the connector):
  x the layers ratio (one save per layer).
"""
from __future__ import annotations

from ..config.catalog import Model
from .checks import num

REF_KV_BYTES_PER_TOKEN = 131072      # Llama-3.1-8B: the PD-path constants were fitted on this model
REF_LAYERS = 32


def kv_ratio(model: Model) -> float:
    return model.kv_bytes_per_token / REF_KV_BYTES_PER_TOKEN


def layer_ratio(model: Model) -> float:
    return model.layers / REF_LAYERS


def pd_path_costs(model: Model, prompt_tokens, pd_handoff_ms, pd_us_per_token, p_send_ms) -> dict:
    """Seconds: ``handoff``, ``per_request_receive`` (= per token x prompt, rescaled), ``p_send`` (rescaled)."""
    t = num("prompt_tokens", prompt_tokens)
    h = num("pd_handoff_ms", pd_handoff_ms)
    u = num("pd_us_per_token", pd_us_per_token)
    s = num("p_send_ms", p_send_ms)
    return {"handoff": h * 1e-3, "per_request_receive": u * 1e-6 * kv_ratio(model) * t,
            "p_send": s * 1e-3 * layer_ratio(model)}


def kv_transfer_s(model: Model, tokens, link_gbps, latency_us, tp=1, efficiency=1.0) -> float:
    """KV hand-off of ``tokens`` tokens over a link: latency + tokens x KV bytes/token (all layers) / (tp x
    eta x link bandwidth); each of ``tp`` GPU pairs moves 1/tp of the KV in parallel."""
    t = num("tokens", tokens)
    bw = num("link_gbps", link_gbps, positive=True)
    lat = num("latency_us", latency_us)
    n = num("tp", tp, positive=True, integer=True)
    eff = num("efficiency", efficiency, positive=True, hi=1.0)
    return lat * 1e-6 + t * model.kv_bytes_per_token / n / (bw * 1e9 * eff)
