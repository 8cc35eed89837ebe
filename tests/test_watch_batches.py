"""Are the first-run and tuned figures of ``course watch`` in docs/watch.md the recorded benchmark
results: one row per recorded pair, each pair present in watch_scripts/ with the expected kinds its
bug script declares, every pair in exactly one batch, and the page's tables generated from the
record?"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tests" / "benchmarks" / "watch_scripts"
sys.path.insert(0, str(ROOT / "tests" / "benchmarks"))

import watch_batches  # noqa: E402

DATA = watch_batches.load()


def test_every_recorded_pair_exists_with_the_kinds_its_bug_script_expects():
    assert DATA["batches"]
    assert sum(len(e["first_run"]["rows"]) for e in DATA["batches"].values()) >= 25
    for entry in DATA["batches"].values():
        first = entry["first_run"]["rows"]
        assert first
        for row in first:
            bug = (SCRIPTS / f"{row['script']}_bug.py").read_text(encoding="utf-8")
            assert (SCRIPTS / f"{row['script']}_fixed.py").exists()
            expect = re.search(r"^expect: (.*)$", bug, re.M).group(1)
            assert sorted(k.strip() for k in expect.split(",")) == row["expect"]
            assert row["verdict"] in ("detected", "partly", "missed")
            assert (row["verdict"] == "detected") == bool(set(row["named"]) & set(row["expect"]))
        if "tuned" in entry:
            assert [r["script"] for r in entry["tuned"]["rows"]] == [r["script"] for r in first]


def test_the_watch_page_shows_the_recorded_figures():
    page = (ROOT / "docs" / "watch.md").read_text(encoding="utf-8")
    assert watch_batches.table(DATA) in page
    for name in DATA["batches"]:
        assert watch_batches.per_script(name, DATA) in page


def test_every_pair_is_in_one_batch_and_the_published_table_is_the_record():
    pairs = [s for _, scripts, _, _ in watch_batches.groups(DATA) for s in scripts]
    on_disk = sorted(p.name[: -len("_bug.py")] for p in SCRIPTS.glob("*_bug.py"))
    assert sorted(pairs) == on_disk, "a pair in no batch, or in two"
    assert set(DATA["latest"]) <= set(on_disk)
    rows = watch_batches.publish_rows(DATA)
    assert rows[-1][0] == "all pairs" and rows[-1][1] == len(on_disk)
    stored = json.loads((ROOT / "docs" / "figures" / "watch_batches.json").read_text())["rows"]
    assert stored == json.loads(json.dumps(rows)), "rerun bench_watch.py --publish"
