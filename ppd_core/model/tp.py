"""Tensor parallelism: the all-reduce bytes term of one step.

    per layer: ``allreduces_per_layer`` x (alpha + 2 (n-1)/n x T x hidden x 2 B / busbw)

(ring all-reduce in nccl-tests' bus-bandwidth convention; busbw and alpha per GPU in ``data/gpus.json``,
H100 NVLink4 figures in ``data/anchors/nccl_allreduce_h100.csv``). 0 at tp = 1.
"""
from __future__ import annotations

from .checks import num


def tp_allreduce_s(tokens, hidden, layers, tp, busbw_gbps, alpha_us, bytes_per_elem=2,
                   allreduces_per_layer=2) -> float:
    """Ring all-reduce time of one step with ``tokens`` tokens (seconds)."""
    t = num("tokens", tokens)
    h = num("hidden", hidden, positive=True, integer=True)
    L = num("layers", layers, positive=True, integer=True)
    n = num("tp", tp, positive=True, integer=True)
    bw = num("busbw_gbps", busbw_gbps, positive=True)
    a = num("alpha_us", alpha_us)
    b = num("bytes_per_elem", bytes_per_elem, positive=True)
    k = num("allreduces_per_layer", allreduces_per_layer, integer=True)
    if n == 1:
        return 0.0
    return L * k * (a * 1e-6 + 2.0 * (n - 1) / n * t * h * b / (bw * 1e9))
