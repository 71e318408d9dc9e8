"""Golden outputs of the CLI, recorded before a pure refactor and compared byte-for-byte by tests/test_golden.py.

    .venv/bin/python tests/golden/make_golden.py          # rewrite tests/golden/*.json from the current code

Every case is one CLI invocation (``python -m ppd_core ...`` run in-process through ``ppd_core.cli.main``);
what is compared is its stdout (JSON re-serialised with sorted keys, wall-clock fields removed) and, for
``--out`` files, the written table without its wall-clock column. Regenerate only when a change is meant to
move numbers, in the same commit, and say why in its message.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent
MEASURED = ROOT.parent / "shared" / "data" / "ppd-measured"
TRACES = ROOT / "data" / "traces"
WALL_KEYS = ("wall_s", "wall_s_median", "wall_s_min")

SMALL = ["conversations=40"]

# (name, argv after ``run``): every layout category, policy, workload family, several GPUs/models, both link
# sharing modes, client_concurrency 0 and 50, a trace of each format
RUN_CASES: list[tuple[str, list[str]]] = []


def _add(name: str, *pairs: str) -> None:
    RUN_CASES.append((name, [*pairs]))


for lay in ("4R", "2R", "1P_3D", "2P_2D", "3P_1D", "1P_3pD", "2P_2pD", "3P_1pD", "2P_1D_1pD", "1P_1D_2pD",
            "1R_1P_2D", "1R_2P_1D", "2R_1P_1D", "1R_1P_1D_1pD"):
    _add(f"layout-{lay}", f"layout={lay}", "workload=sharegpt", *SMALL)
for pol in ("pd", "ppd", "dynamic"):
    for lay in ("2P_2D", "1P_3D", "1P_1D_2pD"):
        _add(f"policy-{pol}-{lay}", f"layout={lay}", f"policy={pol}", "workload=small_mid_bal", *SMALL)
_add("policy-dynamic-table", "layout=1P_3D", "policy=dynamic-table", "workload=small_mid_bal", "conversations=30")
for wl in ("small_tiny", "small_big_paste", "large_long_gen", "large_huge_paste", "wildchat", "sharegpt"):
    _add(f"workload-{wl}", "layout=2P_2pD", f"workload={wl}", *SMALL)
_add("window-synthetic", "layout=2P_2D", "policy=pd", "workload=large_mid_bal", "arrival_window_s=10", "qps=6")
for gpu, model, tp in (("A100-80GB", "Llama-3.1-8B", "1"), ("H100-SXM", "Qwen2.5-14B", "1"),
                       ("H100-SXM", "Llama-3.1-70B", "4"), ("L40S", "Llama-3.1-8B", "1"),
                       ("H200", "Llama-3.1-8B", "2"), ("MI300X", "Qwen3-30B-A3B", "1")):
    _add(f"hw-{gpu}-{model}-tp{tp}", "layout=2P_2pD", f"gpu={gpu}", f"model={model}", f"tp={tp}", *SMALL)
for sharing in ("fair", "independent"):
    _add(f"link-{sharing}", "layout=3P_1D", "policy=pd", f"link_sharing={sharing}", "bandwidth_gbps=10", "qps=8",
         *SMALL)
for cc in ("0", "50"):
    _add(f"concurrency-{cc}", "layout=1P_3pD", f"client_concurrency={cc}", "client=benchmark", "qps=12", "conversations=80")
_add("rehash-think", "layout=2P_2D", "policy=dynamic", "rehash_frac=0.3", "think_time_s=0.5", "turns=4", *SMALL)
_add("timeouts", "layout=1P_3D", "policy=pd", "qps=40", "timeout_s=2", "conversations=60")
_add("tight-memory", "layout=2P_2pD", "gpu_mem_util=0.4", "max_batched_tokens=1024", "workload=large_huge_paste",
     *SMALL)
_add("weights-slo", "layout=2P_2D", "policy=dynamic", "w_tpot=4", "slo_ttft_ms=50,300", "slo_tpot_ms=10", *SMALL)
_add("seed-7", "layout=1R_1P_2D", "policy=dynamic", "seed=7", *SMALL)
_add("url", "http://localhost:8501/?layout=2P_2pD&policy=ppd&workload=wildchat&conversations=30")
TRACE_CASES = [("trace-csv", "example.csv", ["layout=2P_2D", "policy=dynamic"]),
               ("trace-mooncake", "example_mooncake.jsonl", ["layout=2P_2pD"]),
               ("trace-sharegpt", "example_sharegpt.json", ["layout=1P_3D", "policy=ppd", "qps=2"])]


def _strip_wall(x):
    if isinstance(x, dict):
        return {k: _strip_wall(v) for k, v in x.items() if k not in WALL_KEYS}
    if isinstance(x, list):
        return [_strip_wall(v) for v in x]
    return x


def cli(argv: list[str]) -> str:
    """Run ``python -m ppd_core ARGV`` in this process; return stdout (exit status must be 0)."""
    from ppd_core.cli import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    if rc != 0:
        raise RuntimeError(f"ppd_core {' '.join(argv)} exited {rc}: {err.getvalue()[-400:]}")
    return out.getvalue()


def _json_out(argv: list[str]):
    return _strip_wall(json.loads(cli(argv)))


def _table_file(path: Path) -> list[dict]:
    import pandas as pd
    df = pd.read_csv(path)
    df = df.drop(columns=[c for c in df.columns if c.split(".")[-1] in WALL_KEYS])
    return json.loads(df.to_json(orient="records", double_precision=15))


def run_cases() -> dict:
    out = {}
    for name, pairs in RUN_CASES:
        out[name] = _json_out(["run", *pairs, "--json"])
    for name, fname, pairs in TRACE_CASES:
        out[name] = _json_out(["run", *pairs, "--json", "--trace", str(TRACES / fname)])
    return out


def validate_case() -> dict:
    return _json_out(["validate", "--measured", str(MEASURED), "--sample", "6", "--seed", "3", "--workers", "1",
                      "--json"])


def paper_case() -> dict:
    out = _json_out(["paper", "--quick", "--only", "interference,fig6", "--measured", str(MEASURED), "--json"])
    out["measured_dir"] = "<measured>" if out["measured_dir"] == str(MEASURED) else out["measured_dir"]
    return out


def sweep_case(tmp: Path) -> dict:
    out = tmp / "sweep.csv"
    text = cli(["sweep", "layout=2P_2D,2P_2pD", "qps=1,4", "workload=small_tiny", "conversations=30",
                "--workers", "1", "--no-cache", "--out", str(out)])
    table = cli(["sweep", "layout=2P_2D,1P_3pD", "policy=pd,ppd", "workload=sharegpt", "conversations=30",
                 "--workers", "1", "--no-cache"])
    return {"out_stdout": text, "rows": _table_file(out), "table": table}


def advise_case(tmp: Path) -> dict:
    out = tmp / "advise.csv"
    text = cli(["advise", "--gpus", "3", "--qps", "1,4", "--workers", "1", "--no-cache", "--out", str(out),
                "workload=small_mid_bal", "conversations=30"])
    return {"stdout": text, "ranked": _table_file(out)}


def dumps(x) -> str:
    return json.dumps(x, indent=1, sort_keys=True, allow_nan=True) + "\n"


def compute_all() -> dict[str, str]:
    """File name -> exact text of every golden file (a fresh, empty sweep cache for the table builds)."""
    with tempfile.TemporaryDirectory() as tmp:
        old = os.environ.get("PPD_CACHE_DIR")
        os.environ["PPD_CACHE_DIR"] = str(Path(tmp) / "cache")
        try:
            return {"run.json": dumps(run_cases()), "validate.json": dumps(validate_case()),
                    "paper.json": dumps(paper_case()), "sweep.json": dumps(sweep_case(Path(tmp))),
                    "advise.json": dumps(advise_case(Path(tmp)))}
        finally:
            if old is None:
                os.environ.pop("PPD_CACHE_DIR", None)
            else:
                os.environ["PPD_CACHE_DIR"] = old


def main() -> int:
    sys.path.insert(0, str(ROOT))
    for name, text in compute_all().items():
        (GOLDEN / name).write_text(text, encoding="utf-8")
        print(f"wrote {GOLDEN / name} ({len(text):,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
