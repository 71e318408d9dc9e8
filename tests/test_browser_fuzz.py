"""Browser fuzz (issue #8.7): random query strings on all six pages, plus random widget moves.

Query strings mix wrong types, NaN/Inf, huge numbers and strings, unicode, empty values, repeated keys,
unknown keys and page-only keys on other pages. Every load must end with no ``stException``, a warning
naming every rejected key (oracle: unknown on that page, or refused by the strict ``ppd_core.parse``), the
address bar equal to the share link where there is one, and the server healthy; at the end the server's
memory is bounded. CI runs a small sample; ``PPD_LONG_TESTS=1`` runs >= 300 loads (``PPD_FUZZ_LOADS``
overrides the count, ``PPD_FUZZ_SEED`` the seed).
"""
from __future__ import annotations

import os
import random
import urllib.request
from urllib.parse import quote

import pytest

import ppd_core
from ppd_core.config.scenario import SPEC

from browser_util import alerts, bar, link_query, settle, share_link

pytestmark = pytest.mark.browser

LONG = os.environ.get("PPD_LONG_TESTS") == "1"
LOADS = int(os.environ.get("PPD_FUZZ_LOADS", "300" if LONG else "6"))
SEED = int(os.environ.get("PPD_FUZZ_SEED", "8"))
PAGES = ("", "sweep", "learn", "advise", "paper", "validation")
PAGE_KEYS = {"": (), "sweep": (), "learn": ("learn_step", "learn_prefills", "learn_prefill_tokens",
                                            "learn_cached_tokens"),
             "advise": ("adv_gpus", "adv_convs", "adv_qps", "adv_slo_ttft", "adv_slo_tpot", "adv_w_ttft",
                        "adv_w_tpot"),
             "paper": ("paper_t2_full",), "validation": ("val_source", "val_sample")}
ALL_PAGE_KEYS = tuple(k for ks in PAGE_KEYS.values() for k in ks)
#: Keys whose valid values stay cheap to simulate (size keys and dynamic-table are only fuzzed with bad values).
CHEAP = {"qps": ("0.5", "3", "6.5", "12"), "bandwidth_gbps": ("5", "25", "150"), "w_tpot": ("0", "2.5"),
         "w_ttft": ("0.5", "3"), "policy": ("pd", "PPD", "dynamic"), "layout": ("1P_3D", "2P_2D", "4R", "1R_1P_2pD"),
         "gpu": ("H100-SXM", "a100-80gb", "L4"), "model": ("Llama-3.1-8B", "Llama-3.1-70B", "Qwen2.5-14B"),
         "tp": ("1", "2", "4"), "seed": ("1", "99"), "link_sharing": ("independent",), "rehash_frac": ("0.2",),
         "slo_ttft_ms": ("150,300", "500, 100"), "workload": ("small_tiny", "sharegpt", "wildchat")}
BAD_VALUES = ("abc", "nan", "NaN", "inf", "-inf", "1e400", "-1", "", "9" * 60, "0x10", "1,2,3", "çå∂ß🙂",
              "<script>alert(1)</script>", "%00", "true", "P" * 300, "3.7", "-0")
UNKNOWN_KEYS = ("foo", "κλειδί", "x" * 30, "Qps", "layout ", "🙂", "a.b", "embedx")


def _query(rng: random.Random, page: str) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for _ in range(rng.randint(0, 6)):
        kind = rng.random()
        if kind < 0.3:
            k = rng.choice(list(CHEAP))
            pairs.append((k, rng.choice(CHEAP[k])))
        elif kind < 0.6:
            pairs.append((rng.choice(list(SPEC)), rng.choice(BAD_VALUES)))
        elif kind < 0.75:
            pairs.append((rng.choice(UNKNOWN_KEYS), rng.choice(BAD_VALUES + ("1",))))
        elif kind < 0.9:
            pairs.append((rng.choice(ALL_PAGE_KEYS), rng.choice(BAD_VALUES + ("1", "2", "upload", "true"))))
        elif pairs:
            k, _ = rng.choice(pairs)                      # a repeated key
            pairs.append((k, rng.choice(BAD_VALUES + ("2",))))
    # keep every load cheap: a small run size last (a fuzzed size key becomes a repeated key)
    size = {"": [("conversations", "30")], "sweep": [("conversations", "8")], "validation": [("val_sample", "3")],
            "learn": [("conversations", "2")]}.get(page, [])
    return pairs + size


def _rejected(page: str, pairs: list[tuple[str, str]]) -> set[str]:
    """Keys that must be warned about: unknown on this page, or (last value) refused by the strict parser."""
    last = dict(pairs)
    out = set()
    for k, v in last.items():
        if k not in SPEC and k not in PAGE_KEYS[page]:
            out.add(k)
        elif k in SPEC:
            try:
                ppd_core.parse({k: v})
            except ppd_core.PPDError:
                out.add(k)
    return out


def _healthy(base: str) -> bool:
    with urllib.request.urlopen(base + "/_stcore/health", timeout=30) as r:
        return r.status == 200 and r.read().strip() == b"ok"


def _move_a_slider(page, rng: random.Random) -> None:
    sliders = page.get_by_test_id("stSidebar").get_by_role("slider")
    n = sliders.count()
    if not n:
        return
    s = sliders.nth(rng.randrange(n))
    if not s.is_visible():
        return
    s.focus()
    page.keyboard.press(rng.choice(("ArrowRight", "ArrowLeft", "End", "Home")))


def _check_load(page, base: str, page_path: str, pairs, rejected) -> list[str]:
    problems = []
    if page.get_by_test_id("stException").count():
        problems.append(f"exception: {page.get_by_test_id('stException').first.inner_text()[:300]}")
    text = alerts(page)
    for k in rejected:
        if f"Parameter {k.strip()[:40]}" not in text and f"Parameter {k[:40]}" not in text:
            problems.append(f"no warning for rejected key {k!r}")
    link = share_link(page)
    if page_path in ("", "sweep", "learn") and link is not None and bar(page) != link_query(link):
        problems.append(f"address bar {page.url} != share link {link}")
    if not _healthy(base):
        problems.append("server unhealthy")
    return problems


@pytest.mark.timeout(max(900, 12 * LOADS))      # long mode: 300 loads take ~25 min on 2 shared cores
def test_fuzz_query_strings_on_every_page(st_server, page):
    from test_load import server_pid, server_rss
    rng = random.Random(SEED)
    failures = []
    for i in range(LOADS):
        page_path = PAGES[i % len(PAGES)] if i < len(PAGES) else rng.choice(PAGES)
        pairs = _query(rng, page_path)
        qs = "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in pairs)
        url = f"{st_server}/{page_path}" + (f"?{qs}" if qs else "")
        page.goto(url)
        try:
            settle(page, timeout_ms=300_000)
        except Exception as exc:            # noqa: BLE001  (reported with the URL)
            failures.append(f"load {i} {url[:300]}: not settled ({type(exc).__name__})")
            continue
        problems = _check_load(page, st_server, page_path, pairs, _rejected(page_path, pairs))
        if page_path in ("", "sweep", "learn") and rng.random() < 0.4:
            _move_a_slider(page, rng)
            settle(page, timeout_ms=300_000)
            problems += [f"after a slider move: {p}" for p in _check_load(page, st_server, page_path, [], set())]
        failures += [f"load {i} {url[:300]}: {p}" for p in problems]
        if (i + 1) % 25 == 0:
            print(f"fuzz: {i + 1}/{LOADS} loads, {len(failures)} problems so far", flush=True)
    rss, nproc = server_rss(server_pid(st_server))
    print(f"fuzz: {LOADS} loads, seed {SEED}; server RSS {rss / 2**20:.0f} MB over {nproc} processes")
    assert not failures, "\n".join(failures[:30])
    assert rss < 1_500 * 2**20
