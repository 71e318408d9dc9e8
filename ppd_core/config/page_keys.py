"""URL keys that belong to a dashboard page, not to the scenario (Learn's step, the Advisor's inputs, the
classroom mode, ...). A page link pasted into the command line keeps its scenario keys; these are ignored
with a one-line note. Every page-only control of the dashboard is covered (tests/test_presets.py checks it)."""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from .scenario import Scenario, parse, query_pairs

#: Prefixes of the pages' own keys: Learn, Advisor, Validation, Paper, Compare.
PAGE_KEY_PREFIXES: tuple[str, ...] = ("learn_", "adv_", "val_", "paper_", "cmp_")
#: Single page-only keys: classroom mode, the preset a link came from, Streamlit's embed switches.
PAGE_KEYS: tuple[str, ...] = ("present", "preset", "embed", "embed_options")


def is_page_key(key: str) -> bool:
    return key in PAGE_KEYS or key.startswith(PAGE_KEY_PREFIXES)


def split_page_keys(pairs: Iterable[tuple[str, Any]]) -> tuple[list[tuple[str, Any]], list[str]]:
    """(the pairs that are not page-only, the page-only keys found, in order, once each)."""
    kept, dropped = [], []
    for k, v in pairs:
        if is_page_key(k):
            if k not in dropped:
                dropped.append(k)
        else:
            kept.append((k, v))
    return kept, dropped


def parse_link(source: str | Mapping[str, Any] | Iterable[str]) -> tuple[Scenario, list[str]]:
    """Strict parse of any page's link: its page-only keys are left out and returned (so the caller can say
    in one line that they were ignored); any other unknown key still raises ``ScenarioError``."""
    kept, dropped = split_page_keys(query_pairs(source))
    return parse(dict(kept)), dropped
