"""Scenario grids: every combination of swept values applied to a base scenario, the paper's study grid,
the ``KEY=V1,V2`` syntax of the command line, and the flat row of one run (scenario columns + figures)."""
from __future__ import annotations

import itertools
import math
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Sequence
from urllib.parse import quote

from ..config.errors import ScenarioError
from ..config.scenario import FIELDS, SPEC, Scenario, _coerce, is_unset, parse, render_value

MAX_GRID = 20_000                 # scenarios per sweep
PAPER_QPS = (0.5, 1, 2, 4, 6, 8, 10, 12, 16, 20)
PAPER_BASE = MappingProxyType({"policy": "pd", "arrival_window_s": 10, "client": "benchmark", "client_concurrency": 50, "timeout_s": 120})


def expand_grid(base: Scenario | Mapping[str, Any] | None, axes: Mapping[str, Sequence[Any]]) -> list[Scenario]:
    """Every combination of ``axes`` values (first axis slowest) applied to ``base``.

    Keys are scenario keys; every value goes through the scenario parser, so an error names its key.
    Values that parse to the same thing are kept once. More than ``MAX_GRID`` scenarios raise."""
    if base is None:
        base_sc = Scenario()
    elif isinstance(base, Scenario):
        base_sc = base
    elif isinstance(base, Mapping):
        base_sc = parse(base)
    else:
        raise ScenarioError("base", f"must be a Scenario or a mapping of scenario keys, not {type(base).__name__}")
    keys, values = [], []
    for key, raw in axes.items():
        if key not in SPEC:
            raise ScenarioError(str(key)[:40], f"unknown key; allowed keys: {', '.join(SPEC)}")
        if isinstance(raw, (str, bytes)) or not isinstance(raw, Iterable):
            raw = [raw]
        seen = list(dict.fromkeys(_coerce(SPEC[key], v) for v in raw))   # parsed values, each once
        if not seen:
            raise ScenarioError(key, "needs at least one value to sweep")
        keys.append(key)
        values.append(seen)
    n = math.prod(len(v) for v in values)
    check_grid_size(n)
    out = []
    for combo in itertools.product(*values):
        changes = dict(zip(keys, combo))
        try:
            out.append(base_sc.with_(**changes))
        except ScenarioError as exc:
            where = " ".join(f"{k}={render_value(v)}" for k, v in changes.items())
            raise ScenarioError(exc.key, f"{_after_key(exc)} (grid point {where})") from None
    return out


def check_grid_size(n: int) -> None:
    if n > MAX_GRID:
        raise ScenarioError("grid", f"{n:,} scenarios exceed the cap of {MAX_GRID:,} per sweep; sweep fewer values")


def paper_grid_axes() -> dict[str, tuple]:
    """The paper's study: 17 four-GPU layouts x 18 synthetic workloads x 10 QPS (3,060 runs)."""
    from ..config.layout import PAPER_LAYOUTS
    from ..config.workload_catalog import SYNTHETIC
    return {"layout": PAPER_LAYOUTS, "workload": SYNTHETIC, "qps": PAPER_QPS}


def _after_key(exc: ScenarioError) -> str:
    text = str(exc)
    prefix = f"{exc.key}: "
    return text[len(prefix):] if text.startswith(prefix) else text


def query_strings(scenarios: Iterable[Scenario]) -> list[tuple[str, str]]:
    """(``to_query(include_defaults=True)``, ``to_query()``) of each scenario, rendering each distinct
    (key, value) once: grids repeat values, and URL-quoting dominates a cached sweep otherwise."""
    memo: dict[tuple[str, Any], str] = {}
    out = []
    for sc in scenarios:
        full, short = [], []
        for f in FIELDS:
            v = getattr(sc, f.key)
            if is_unset(f.key, v):
                continue                    # an unset optional key (per-role hardware, placement): as to_query
            piece = memo.get((f.key, v))
            if piece is None:
                piece = memo[(f.key, v)] = f"{f.key}={quote(render_value(v), safe=',._-')}"
            full.append(piece)
            if v != f.default:
                short.append(piece)
        out.append(("&".join(full), "&".join(short)))
    return out


def flatten(summary: Mapping[str, Any]) -> dict[str, Any]:
    """``run --json`` summary -> flat figures: groups' names lose the ``groups.`` prefix; None -> NaN."""
    flat: dict[str, Any] = {}

    def walk(prefix: str, x: Any) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                walk(f"{prefix}{k}.", v)
        else:
            flat[prefix[:-1]] = math.nan if x is None else x

    for k, v in summary.items():
        if k not in ("scenario", "warnings"):   # warnings: text; the groups' counts are kept
            walk("" if k == "groups" else f"{k}.", v)
    return flat


def scenario_columns(sc: Scenario, query: str | None = None) -> dict[str, Any]:
    """Every scenario key (SLO lists as text) and ``query`` (the URL query, defaults omitted)."""
    out: dict[str, Any] = {}
    for f in FIELDS:
        v = getattr(sc, f.key)
        if is_unset(f.key, v):
            continue                        # an unset optional key: no column, as in the summary's scenario
        out[f.key] = render_value(v) if isinstance(v, tuple) else v
    out["query"] = sc.to_query() if query is None else query
    return out


def parse_sweep_args(pairs: Sequence[str]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """``KEY=V`` fixes a key, ``KEY=V1,V2`` sweeps it (``;`` separates the alternatives of the list-valued
    keys slo_ttft_ms / slo_tpot_ms). A whole shared URL sets the base. Returns (base, axes)."""
    base: dict[str, str] = {}
    axes: dict[str, list[str]] = {}
    for item in pairs:
        if "=" not in item.split("?", 1)[0] and ("?" in item or "://" in item):
            base.update(parse(item).to_params())
            continue
        if "=" not in item:
            raise ScenarioError(item[:40], "expected KEY=VALUE or KEY=V1,V2,... (or a whole shared URL)")
        key, raw = item.split("=", 1)
        key = key.strip()
        if key not in SPEC:
            raise ScenarioError(key[:40], f"unknown key; allowed keys: {', '.join(SPEC)}")
        sep = ";" if SPEC[key].kind == "floats" else ","
        vals = [v.strip() for v in raw.split(sep)]
        if any(not v for v in vals):
            raise ScenarioError(key, f"empty value in {raw[:40]!r}; separate alternatives with {sep!r}")
        base.pop(key, None)
        axes.pop(key, None)
        if len(vals) == 1:
            base[key] = vals[0]
        else:
            axes[key] = vals
    return base, axes


def table_key(sc: Scenario) -> Scenario:
    """The part of a scenario the table depends on (workload, load and seed do not matter)."""
    return Scenario(layout=sc.layout, gpu=sc.gpu, model=sc.model, tp=sc.tp, bandwidth_gbps=sc.bandwidth_gbps,
                    link_latency_us=sc.link_latency_us, link_sharing=sc.link_sharing, w_ttft=sc.w_ttft,
                    w_tpot=sc.w_tpot, max_batched_tokens=sc.max_batched_tokens, gpu_mem_util=sc.gpu_mem_util)
