"""The MkDocs site's generated reference pages, from the code that defines what they describe, so the site
cannot drift from it: the scenario keys from ``ppd_core.config.fields.FIELDS`` and the command line from
``ppd_core.cli.build_parser``. MkDocs runs this as a hook (``mkdocs.yml``: ``hooks``) before every build;
``python scripts/docs_reference.py`` writes the same files by hand."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "reference"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def scenario_keys() -> str:
    from ppd_core.config.fields import FIELDS, MAX_CONVERSATIONS, MAX_QUERY_CHARS, MAX_REQUESTS, MAX_TURNS
    from ppd_core.config.layout import MAX_NODES
    from ppd_core.config.fields import _fmt
    lines = ["# Scenario keys", "",
             "The same keys are used by the CLI (`key=value`), the dashboard URL (`?key=value`) and the JSON output "
             "(`summary[\"scenario\"]`). Defaults are the paper's main setup (4×H100-SXM, Llama-3.1-8B, a "
             "ShareGPT-like workload, NVLink-class bandwidth, layout 2P_2pD) under open-loop production-like "
             "traffic (`client=open`); `client=benchmark` is the measured benchmarks' 50-connection closed-loop "
             "client, which the Paper and Validation views, `validate`, `calibrate` and `paper` use.", "",
             "*Generated from `ppd_core/config/fields.py` at every docs build (`scripts/docs_reference.py`).*", "",
             "| key | default | unit | allowed | meaning |", "|---|---|---|---|---|"]
    for f in FIELDS:
        default = ",".join(_fmt(x) for x in f.default) if isinstance(f.default, tuple) else _fmt(f.default)
        lines.append(f"| `{f.key}` | {_cell(default)} | {_cell(f.unit)} | {_cell(f.allowed())} | {_cell(f.help)} |")
    lines += ["", f"Size caps, so no input can make a run unbounded: at most {MAX_CONVERSATIONS:,} conversations (an "
              f"imported trace is capped by its requests only), {MAX_TURNS} turns, about {MAX_REQUESTS:,} requests "
              f"(conversations × turns), {MAX_NODES} nodes, {MAX_QUERY_CHARS:,} characters of query string; larger "
              "scenarios are refused with the cap in the message. Every request either finishes or times out, so "
              "every run ends.", ""]
    return "\n".join(lines)


def cli() -> str:
    from ppd_core.cli import COMMANDS, build_parser
    p = build_parser()
    sub = next(a for a in p._actions if a.__class__.__name__ == "_SubParsersAction")   # argparse has no public API
    lines = ["# Command-line reference", "",
             "Every subcommand of `python -m ppd_core` (installed as `ppd`) with its `--help`. Bad input prints one "
             "line naming the argument and what is allowed, exit status 2.", "",
             "*Generated from `ppd_core/cli/` at every docs build (`scripts/docs_reference.py`).*", ""]
    for name in COMMANDS:
        text = sub.choices[name].format_help()
        lines += [f"## `{name}`", "", "```text", text.rstrip(), "```", ""]
    return "\n".join(lines)


def write() -> list[Path]:
    import os
    sys.path.insert(0, str(ROOT))
    os.environ["COLUMNS"] = "100"          # argparse wraps --help at the terminal width: fix it
    OUT.mkdir(parents=True, exist_ok=True)
    out = []
    for name, fn in (("scenario-keys.md", scenario_keys), ("cli-help.md", cli)):
        path = OUT / name
        text = fn()
        if not path.exists() or path.read_text() != text:     # unchanged files keep their mtime (mkdocs serve)
            path.write_text(text)
        out.append(path)
    return out


def on_pre_build(config) -> None:        # MkDocs hook
    write()


if __name__ == "__main__":
    for p in write():
        print(f"wrote {p}")
