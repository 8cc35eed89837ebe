"""First-run and tuned results of ``course watch`` on a batch of bug/fix script pairs
(``watch_batches.json``), recorded from ``bench_watch.py``'s ``build/bench-watch/summary.json``.

    # 1. run the new pairs once, before changing the watcher for them, and record that run
    build/bench-venv/bin/python tests/benchmarks/bench_watch.py --tools watch --no-overhead --only NAME ...
    .venv/bin/python tests/benchmarks/watch_batches.py record "BATCH" first_run
    # 2. after the checks for the batch are written, run again and record the tuned result
    .venv/bin/python tests/benchmarks/watch_batches.py record "BATCH" tuned
    # the tables in docs/watch.md; the pairs of every batch (for --only)
    .venv/bin/python tests/benchmarks/watch_batches.py table
    .venv/bin/python tests/benchmarks/watch_batches.py names
    # keep the last run's rows as each pair's latest result (bench_watch.py --publish does it too)
    .venv/bin/python tests/benchmarks/watch_batches.py latest

``latest`` holds each pair's most recent result (verdict, false alarm, the commit it ran on); the
table of all batches (first run beside the latest run, over every pair) is rendered from it and
written into docs/watch.md by ``bench_watch.py --publish`` (``tests/benchmarks/doc_tables.py``).
The pairs written before the batches were recorded row by row (``earlier``) keep the first-run
figures their pages gave, with their lists of pairs.

Not part of the test suite; ``tests/test_watch_batches.py`` checks the page against the data.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DATA = HERE / "watch_batches.json"
SUMMARY = ROOT / "build" / "bench-watch" / "summary.json"


def load() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8")) if DATA.exists() else {"batches": {}}


def record(batch: str, stage: str, summary: Path = SUMMARY) -> dict:
    """Keep course watch's rows of the last benchmark run as ``stage`` of ``batch``."""
    rows = json.loads(summary.read_text(encoding="utf-8"))["watch"]["rows"]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT).stdout.strip()
    data = load()
    entry = data["batches"].setdefault(batch, {})
    keep = [{k: r[k] for k in ("script", "expect", "verdict", "false_alarm", "named")} for r in rows]
    ours = {r["script"] for r in entry.get("first_run", {"rows": keep})["rows"]}
    entry[stage] = {
        "date": datetime.date.today().isoformat(),
        "commit": commit,
        "rows": [r for r in keep if r["script"] in ours],
        # other pairs run beside the batch, for false alarms of the new checks on their fixed versions
        "others": [{"script": r["script"], "false_alarm": r["false_alarm"]}
                   for r in keep if r["script"] not in ours],
    }
    DATA.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return entry[stage]


def record_latest(rows: list[dict], commit: str | None = None) -> int:
    """Keep course watch's ``rows`` (of bench_watch's summary) as each pair's latest result."""
    commit = commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                      text=True, cwd=ROOT).stdout.strip()
    data = load()
    latest = data.setdefault("latest", {})
    for r in rows:
        latest[r["script"]] = {"verdict": r["verdict"], "false_alarm": r["false_alarm"],
                               "named": r["named"], "commit": commit,
                               "date": datetime.date.today().isoformat()}
    DATA.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return len(rows)


def groups(data: dict | None = None) -> list[tuple[str, list[str], int | None, int | None]]:
    """(name, pairs, first-run detections, first-run false alarms) of every batch, oldest first;
    None where no first run was recorded (pairs written beside the watcher)."""
    data = data or load()
    out = [(e["name"], e["scripts"], e.get("first_detected"), e.get("first_false_alarms"))
           for e in data.get("earlier", [])]
    for name, entry in data["batches"].items():
        n, hit, fa = figures(entry["first_run"])
        out.append((name, [r["script"] for r in entry["first_run"]["rows"]], hit, fa))
    return out


def publish_rows(data: dict | None = None) -> list[list]:
    """One row per batch and one for all pairs: pairs, first run, latest run and its commits."""
    data = data or load()
    latest = data.get("latest", {})
    rows, every = [], []
    for name, scripts, hit, fa in groups(data):
        runs = [latest[s] for s in scripts if s in latest]
        every += runs
        first = [len(scripts), hit, fa] if hit is not None else [0, 0, 0]
        rows.append([name, len(scripts), *first, len(runs), sum(r["verdict"] == "detected" for r in runs),
                     sum(r["false_alarm"] for r in runs), sorted({r["commit"] for r in runs})])
    total = [sum(r[i] for r in rows) for i in range(1, 5)]
    rows.append(["all pairs", *total, len(every), sum(r["verdict"] == "detected" for r in every),
                 sum(r["false_alarm"] for r in every), sorted({r["commit"] for r in every})])
    return rows


def render(rows: list[list]) -> str:
    """The table of docs/watch.md: each batch's first run beside its latest run."""
    lines = ["| batch | pairs | first run: detected | first run: false alarms | latest run: detected | "
             "latest run: false alarms | latest run on commit |", "|---|---:|---:|---:|---:|---:|---|"]
    for name, n, first_n, hit, fa, ran, now_hit, now_fa, commits in rows:
        first = [f"{hit}/{first_n}", f"{fa}/{first_n}"] if first_n else ["-", "-"]
        label = f"**{name}**" if name == "all pairs" else name
        lines.append(f"| {label} | {n} | {first[0]} | {first[1]} | {now_hit}/{ran} | {now_fa}/{ran} | "
                     f"{', '.join(commits) or '-'} |")
    return "\n".join(lines)


def publish(run_rows: list[dict]) -> Path:
    """Keep ``run_rows`` as the latest results and write the table of all batches into docs/watch.md."""
    sys.path.insert(0, str(ROOT))
    from tests.benchmarks.doc_tables import publish as publish_table

    record_latest(run_rows)
    rows = publish_rows()
    return publish_table("watch_batches", "watch.md", rows, render(rows))


def figures(stage: dict) -> tuple[int, int, int]:
    """(pairs, bugs detected, false alarms on fixed versions)."""
    rows = stage["rows"]
    return len(rows), sum(r["verdict"] == "detected" for r in rows), sum(r["false_alarm"] for r in rows)


def table(data: dict | None = None) -> str:
    data = data or load()
    lines = ["| batch | pairs | first run: detected | first run: false alarms | tuned: detected | "
             "tuned: false alarms |", "|---|---|---|---|---|---|"]
    for name, entry in data["batches"].items():
        n, hit, fa = figures(entry["first_run"])
        tuned = [f"{v}/{n}" for v in figures(entry["tuned"])[1:]] if "tuned" in entry else ["-", "-"]
        lines.append(f"| {name} | {n} | {hit}/{n} | {fa}/{n} | {tuned[0]} | {tuned[1]} |")
    return "\n".join(lines)


def per_script(batch: str, data: dict | None = None) -> str:
    """One row per pair: the expected kinds, what the first run and the tuned run named."""
    entry = (data or load())["batches"][batch]
    tuned = {r["script"]: r for r in entry.get("tuned", {}).get("rows", [])}
    lines = ["| pair | expected | first run | tuned |", "|---|---|---|---|"]
    for r in entry["first_run"]["rows"]:
        def cell(row):
            if row is None:
                return "-"
            named = ", ".join(row["named"]) or ("notes only" if row["verdict"] == "partly" else "nothing")
            return f"{row['verdict']} ({named}){' + false alarm' if row['false_alarm'] else ''}"
        expect = ", ".join(r["expect"])
        lines.append(f"| `{r['script']}` | {expect} | {cell(r)} | {cell(tuned.get(r['script']))} |")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:2] == ["record"]:
        print(record(sys.argv[2], sys.argv[3]))
    elif sys.argv[1:2] == ["latest"]:
        print(record_latest(json.loads(SUMMARY.read_text(encoding="utf-8"))["watch"]["rows"]), "pairs kept")
    elif sys.argv[1:2] == ["names"]:  # the pairs of every batch, for bench_watch.py --only
        print(" ".join(r["script"] for e in load()["batches"].values() for r in e["first_run"]["rows"]))
    elif sys.argv[1:2] == ["table"]:
        print(table())
        for name in load()["batches"]:
            print(f"\n{name}\n\n{per_script(name)}")
