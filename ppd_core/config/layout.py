"""Cluster layouts written as in the paper: ``2P_2pD``, ``1R_1P_1D_1pD``, ``4P_12pD``.

Roles:
  P   prefill only; prefills Turn 1 and PD-path Turn 2+ and sends the KV to a decode node.
  D   decode node that receives KV from P (classic PD); under ``policy`` it may append-prefill locally.
  pD  prefill-capable decode node: always serves Turn 2+ locally (append-prefill, no transfer).
  R   replica: prefill and decode of every turn on the same GPU(s), no transfer.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType

from .errors import ScenarioError

ROLES = ("R", "P", "D", "pD")
MAX_NODES = 256

_TOKEN = re.compile(r"^([0-9]{1,4})(R|P|D|pD)$")

# The 17 four-GPU layouts of the paper (section 4.2 and appendix A), in the paper's order.
PAPER_LAYOUTS = (
    "4R",
    "1P_3D", "2P_2D", "3P_1D",
    "1P_3pD", "2P_2pD", "3P_1pD",
    "1P_2D_1pD", "1P_1D_2pD", "2P_1D_1pD",
    "1R_1P_2D", "1R_1P_1D_1pD", "1R_1P_2pD", "1R_2P_1D", "1R_2P_1pD", "2R_1P_1D", "2R_1P_1pD",
)

LAYOUT_CATEGORY = MappingProxyType({
    "4R": "Replica",
    "1P_3D": "PD (x=0)", "2P_2D": "PD (x=0)", "3P_1D": "PD (x=0)",
    "1P_3pD": "Full AP-to-D (x=1)", "2P_2pD": "Full AP-to-D (x=1)", "3P_1pD": "Full AP-to-D (x=1)",
    "1P_2D_1pD": "Partial (0<x<1)", "1P_1D_2pD": "Partial (0<x<1)", "2P_1D_1pD": "Partial (0<x<1)",
})


@dataclass(frozen=True)
class Layout:
    """Node counts per role; ``text`` is the canonical string (roles in R, P, D, pD order)."""
    n_R: int
    n_P: int
    n_D: int
    n_pD: int

    @property
    def text(self) -> str:
        parts = [f"{n}{r}" for r, n in zip(ROLES, (self.n_R, self.n_P, self.n_D, self.n_pD)) if n]
        return "_".join(parts)

    @property
    def nodes(self) -> int:
        return self.n_R + self.n_P + self.n_D + self.n_pD

    def roles(self) -> list[str]:
        """One role per node, in a fixed order: R nodes, then P, then D, then pD."""
        return ["R"] * self.n_R + ["P"] * self.n_P + ["D"] * self.n_D + ["pD"] * self.n_pD

    @property
    def category(self) -> str:
        return LAYOUT_CATEGORY.get(self.text, "Hybrid" if self.n_R and (self.n_P or self.n_D or self.n_pD)
                                   else "Custom")


def parse_layout(text: str, key: str = "layout") -> Layout:
    if not isinstance(text, str) or not text.strip():
        raise ScenarioError(key, "must be a layout such as 2P_2pD (counts of R, P, D, pD joined by '_')")
    counts = dict.fromkeys(ROLES, 0)
    for tok in text.strip().split("_"):
        m = _TOKEN.match(tok)
        if not m:
            raise ScenarioError(key, f"bad part {tok[:20]!r} in {text[:40]!r}; allowed: <count><role> with role "
                                     "R, P, D or pD joined by '_', e.g. 2P_2pD or 1R_1P_1D_1pD")
        n, role = int(m.group(1)), m.group(2)
        if n < 1:
            raise ScenarioError(key, f"count of {role} must be at least 1 in {text[:40]!r}")
        if counts[role]:
            raise ScenarioError(key, f"role {role} appears twice in {text[:40]!r}")
        counts[role] = n
    lay = Layout(counts["R"], counts["P"], counts["D"], counts["pD"])
    if lay.nodes > MAX_NODES:
        raise ScenarioError(key, f"{lay.nodes} nodes exceed the cap of {MAX_NODES} nodes")
    if (lay.n_D or lay.n_pD) and not lay.n_P:
        raise ScenarioError(key, f"{text[:40]!r} has decode nodes (D/pD) but no P node to prefill Turn 1")
    if lay.n_P and not (lay.n_D or lay.n_pD):
        raise ScenarioError(key, f"{text[:40]!r} has P nodes but no D or pD node to decode")
    return lay


def replica_layout(lay: Layout) -> Layout:
    """The replica baseline with the same number of GPUs (nodes)."""
    return Layout(lay.nodes, 0, 0, 0)


def pd_layout(lay: Layout) -> Layout:
    """The same layout with every pD turned into a D (the x=0 baseline)."""
    return Layout(lay.n_R, lay.n_P, lay.n_D + lay.n_pD, 0)
