"""The URL state machine: the address bar is the share link.

* **In.** When the address bar changed under us (a freshly opened link, a page reached through the
  navigation, the browser's back button) the URL is authoritative: it is validated against the scenario spec
  and the page's widget ranges before any widget renders, every rejected parameter gets one warning line
  naming the value really used, and every control of the page is seeded with the fixed value (keys absent
  from the URL: their default). A page reached through the sidebar navigation (which clears the query
  string) starts from the scenario the session last showed, so navigation keeps the scenario.
* **Out.** After the controls rendered, the canonical query of the scenario actually shown (defaults
  omitted, values canonicalised: ``policy=PD`` -> ``policy=pd``, rejected keys gone) is written to the
  address bar with ``st.query_params`` and remembered; on the next rerun an unchanged address bar means the
  widgets are authoritative.

The widgets are not ``bind="query-params"``: the native binding writes the URL in the browser only on user
interaction and silently drops what it cannot parse, so it could not show the value really used.
"""
from __future__ import annotations

import functools
import logging
import math
import os
from dataclasses import dataclass
from typing import Any, Mapping, Sequence
from urllib.parse import urlencode, urlsplit

import streamlit as st

from ppd_core.config.scenario import SPEC, Scenario, parse_lenient, render_value

from .controls import Control, clamp_to_widget, local_keys, to_widget

EMBED_KEYS = ("embed", "embed_options")
MAX_WARNINGS = 12
SHADOW = "_scenario_params"      # canonical params of the scenario last shown (carried between pages)
WRITTEN = "_url_written"         # the query this session last wrote to the address bar
PAGE = "_page"
PUBLIC_URL_ENV = "PPD_PUBLIC_URL"   # optional: the address share links start with (a reverse proxy's public one)
PAGE_PATHS = ("/sweep", "/learn", "/explore", "/advise", "/paper", "/validation")

log = logging.getLogger(__name__)


def short(v: Any, n: int = 40) -> str:
    s = str(v)
    return s if len(s) <= n else s[:n] + "…"


def problem_text(p: Exception, n: int = 300) -> str:
    return short(str(p).split(": ", 1)[-1], n)


def raw_params() -> tuple[dict[str, str], dict[str, int]]:
    """The raw query string as {key: last value} (embed keys left out) plus {repeated key: times given}."""
    raw: dict[str, str] = {}
    repeated: dict[str, int] = {}
    for k in list(st.query_params.keys()):
        if k.lower() in EMBED_KEYS:
            continue
        vals = st.query_params.get_all(k)
        raw[k] = vals[-1] if vals else ""
        if len(vals) > 1:
            repeated[k] = len(vals)
    return raw, repeated


def validate_scenario(ctrls: Mapping[str, Control], raw: Mapping[str, str],
                      repeated: Mapping[str, int] | None = None,
                      extra_keys: Sequence[str] = ()) -> tuple[Scenario, list[str], dict[str, Any]]:
    """(scenario the URL asks for after fixing bad values, one warning per rejected parameter, the value to
    seed for every control in ``ctrls``). No Streamlit calls: unit-testable."""
    warnings: list[str] = []
    known = {k: v for k, v in raw.items() if k in SPEC}
    unknown = [k for k in raw if k not in SPEC and k not in extra_keys]
    for k in unknown[:MAX_WARNINGS]:
        warnings.append(f"`{short(k)}`: unknown parameter on this page, ignored.")
    if len(unknown) > MAX_WARNINGS:
        warnings.append(f"… and {len(unknown) - MAX_WARNINGS} more unknown parameters, ignored.")
    for k, times in (repeated or {}).items():
        if k in SPEC:
            warnings.append(f"`{k}`: given {times} times; using the last value {short(raw[k])!r}.")

    base = {k: c.default for k, c in ctrls.items() if c.is_scenario_key and c.default is not None}
    sc, problems = parse_lenient({**base, **known})
    messages: dict[str, str] = {}
    for p in problems:
        messages.setdefault(p.key, problem_text(p))
    fixes: dict[str, Any] = {}           # the dashboard's own limits: widget ranges narrower than the core's
    for k, ctrl in ctrls.items():
        if k not in known:
            continue
        value = getattr(sc, k)
        near = clamp_to_widget(ctrl, to_widget(ctrl, value))
        if near is None:
            fixes[k] = SPEC[k].default if ctrl.default is None else ctrl.default
            messages[k] = (f"{short(known[k])!r} is not available in the dashboard; using default "
                           f"{render_value(fixes[k])}")
        elif near != to_widget(ctrl, value):
            fixes[k] = near
            messages[k] = (f"{short(known[k])!r} is outside the dashboard range [{render_value(ctrl.lo)}, "
                           f"{render_value(ctrl.hi)}]; using the nearest allowed {render_value(near)}")
    if fixes:
        sc, more = parse_lenient({**sc.to_dict(), **fixes})
        for p in more:
            messages.setdefault(p.key, problem_text(p))
    warnings.extend(f"`{k}`: {m}" + ("" if m.endswith(".") else ".") for k, m in messages.items())
    seeds = {k: to_widget(ctrl, getattr(sc, k)) for k, ctrl in ctrls.items()}
    return sc, warnings, seeds


def validate_extra(c: Control, raw: str) -> tuple[Any, str | None]:
    """A page-only key (not a scenario key): its value, or the default / nearest value and a warning line."""
    if c.kind in ("select", "radio", "select_slider"):
        if raw in c.choices():
            return raw, None
        return c.default, (f"`{c.key}`: {short(raw)!r} is not allowed; must be one of "
                           f"{', '.join(map(str, c.choices()))}; using default {c.default}.")
    if c.kind == "text":
        cap = int(c.hi or 4000)
        if len(raw) > cap:
            return raw[:cap], f"`{c.key}`: {len(raw)} characters exceed the cap of {cap}; cut."
        return raw, None
    if c.kind == "toggle":
        if raw in ("true", "false"):
            return raw == "true", None
        return c.default, f"`{c.key}`: {short(raw)!r} is not allowed; must be true or false; using default."
    if c.kind == "multi" and all(isinstance(o, str) for o in c.choices()):
        return _validate_names(c, raw)
    if c.kind == "multi":
        vals, bad = [], []
        for part in raw.split(","):
            try:
                v = float(part)
            except ValueError:
                v = None
            match = next((o for o in c.choices() if v is not None and float(o) == v), None)
            (vals if match is not None else bad).append(match if match is not None else part)
        if bad or not vals:
            fixed = tuple(dict.fromkeys(vals)) or c.default
            return fixed, (f"`{c.key}`: {short(raw)!r} has values not among "
                           f"{', '.join(f'{o:g}' for o in c.choices())}; using {render_value(tuple(fixed))}.")
        return tuple(dict.fromkeys(vals)), None
    try:
        v = float(raw)
    except ValueError:
        return c.default, f"`{c.key}`: {short(raw)!r} is not a number; using default {c.default}."
    if not math.isfinite(v):
        return c.default, f"`{c.key}`: {short(raw)!r} is not finite; using default {c.default}."
    near = clamp_to_widget(c, v)
    if near != v or (c.integer and not float(v).is_integer()):
        near = int(round(near)) if c.integer else near
        return near, (f"`{c.key}`: {short(raw)!r} is outside [{render_value(c.lo)}, {render_value(c.hi)}]; "
                      f"using {render_value(near)}.")
    return (int(v) if c.integer else v), None


def _validate_names(c: Control, raw: str) -> tuple[Any, str | None]:
    """A multi-select of names (e.g. GPU types): comma-separated, matched case-insensitively, once each."""
    by_lower = {o.lower(): o for o in c.choices()}
    vals, bad = [], []
    for part in (p.strip() for p in raw.split(",")):
        if part:
            (vals if part.lower() in by_lower else bad).append(by_lower.get(part.lower(), part))
    fixed = tuple(dict.fromkeys(vals))
    if bad:
        return fixed, (f"`{c.key}`: {short(bad[0])!r} is not allowed; must be among {', '.join(c.choices())}; "
                       f"using {', '.join(fixed) or 'none'}.")
    return fixed, None


@dataclass(frozen=True)
class Arrival:
    """What ``begin`` found: ``external`` (the URL was authoritative this run), the scenario it named
    (fixed) and one warning per rejected parameter."""
    external: bool
    scenario: Scenario | None
    warnings: tuple[str, ...]


def begin(page: str, ctrls: Mapping[str, Control], extras: Sequence[Control] = ()) -> Arrival:
    """Before any control renders: if the address bar is not what this session last wrote, validate it and
    seed every control of the page (scenario keys in ``ctrls``, page-only keys in ``extras``)."""
    prev = st.session_state.get(PAGE)
    st.session_state[PAGE] = page
    raw, repeated = raw_params()
    if prev == page and raw == st.session_state.get(WRITTEN):
        return Arrival(False, None, ())
    if prev is not None and prev != page and not any(k in SPEC for k in raw):
        # reached through the navigation, which clears the query string: keep the session's scenario
        local = local_keys(page)
        raw = {**{k: v for k, v in (st.session_state.get(SHADOW) or {}).items() if k not in local}, **raw}
    sc, warnings, seeds = validate_scenario(ctrls, raw, repeated, [c.key for c in extras])
    for k, v in seeds.items():
        st.session_state[k] = v
    for c in extras:
        if c.key in raw:
            want, msg = validate_extra(c, raw[c.key])
            if want is None:
                st.session_state.pop(c.key, None)      # default known only once the page ran
            else:
                st.session_state[c.key] = want
            if msg:
                warnings.append(msg)
            if c.key in repeated:
                warnings.append(f"`{c.key}`: given {repeated[c.key]} times; using the last value "
                                f"{short(raw[c.key])!r}.")
        else:
            st.session_state.pop(c.key, None)          # the widget starts at its default
    return Arrival(True, sc, tuple(warnings))


def extra_value_text(c: Control, v: Any) -> str:
    if c.kind == "toggle":
        return "true" if v else "false"
    if isinstance(v, (tuple, list)):
        return ",".join(render_value(x) for x in v)
    return render_value(v)


def extras_in_url(extras: Sequence[Control]) -> dict[str, str]:
    """Page-only keys whose current value differs from their default (defaults are left out of links; a
    control whose default is not known yet, ``default=None``, is left to the page's later ``sync``)."""
    out = {}
    for c in extras:
        v = st.session_state.get(c.key, c.default)
        if c.default is not None and v is not None and v != c.default and (not isinstance(v, (list, tuple))
                                                   or tuple(v) != tuple(c.default or ())):
            out[c.key] = extra_value_text(c, v)
    return out


def write(page: str, sc: Scenario, extras: Sequence[Control] = ()) -> dict[str, str]:
    """Make the address bar the canonical link of ``sc`` (+ page-only keys) and remember the scenario for
    the other pages. Returns the query written."""
    query = {**sc.to_params(), **extras_in_url(extras)}
    raw, repeated = raw_params()
    if raw != query or repeated:
        st.query_params.from_dict(query)
    st.session_state[WRITTEN] = query
    local = local_keys(page)
    old = st.session_state.get(SHADOW) or {}
    st.session_state[SHADOW] = {**{k: v for k, v in old.items() if k in local},
                                **{k: v for k, v in sc.to_params().items() if k not in local}}
    return query


def public_url_problem(raw: str) -> str | None:
    """Why ``raw`` cannot be the base of share links (None: it can): an absolute http(s) URL with a host and
    optionally a path, without user name, query or fragment."""
    if any(c.isspace() for c in raw):
        return "it contains white space"
    try:
        parts = urlsplit(raw)
        parts.port                        # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError as exc:
        return f"it is not a URL ({exc})"
    if parts.scheme not in ("http", "https"):
        return "it must start with http:// or https://"
    if not parts.hostname:
        return "it names no host"
    if parts.username is not None or parts.password is not None:
        return "it must not carry a user name or password"
    if parts.query or parts.fragment or raw.endswith(("?", "#")):
        return "it must not carry a query (?…) or fragment (#…)"
    return None


@functools.cache
def public_base(raw: str | None) -> str | None:
    """The share links' base from ``PPD_PUBLIC_URL``'s value (no trailing slash), or None when unset. A bad value
    is logged once per process, one line, and ignored (links then use the browser's address)."""
    if raw is None or not raw.strip():
        return None
    problem = public_url_problem(raw.strip())
    if problem:
        log.warning("%s=%r is ignored: %s; share links use the address the browser shows", PUBLIC_URL_ENV,
                    short(raw, 80), problem)
        return None
    return raw.strip().rstrip("/")


def link(page_path: str, query: Mapping[str, str]) -> str:
    """The full share link of ``query`` on ``page_path`` ("" = Explore): on ``PPD_PUBLIC_URL`` when it is set
    and valid, else on the address the visitor's browser shows (``st.context.url``: the public address, also
    behind a proxy), less the page's own path."""
    base = public_base(os.environ.get(PUBLIC_URL_ENV))
    if base is None:
        base = (st.context.url or "http://localhost:8501").split("?")[0].rstrip("/")
        for p in PAGE_PATHS:
            if base.endswith(p):
                base = base[: -len(p)]
    q = urlencode(query, safe=",")
    return f"{base}/{page_path}" + (f"?{q}" if q else "")


def cli_command(sc: Scenario) -> str:
    """``python -m ppd_core run key=value ...`` for the scenario (defaults omitted)."""
    pairs = " ".join(f"{k}={v}" for k, v in sc.to_params().items())
    return f"python -m ppd_core run {pairs}".rstrip()
