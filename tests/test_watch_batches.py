"""Are the first-run and tuned figures of ``course watch`` in docs/watch.md the recorded benchmark
results: one row per recorded pair, each pair present in watch_scripts/ with the expected kinds its
bug script declares, and the page's tables generated from the record?"""

from __future__ import annotations

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
    for entry in DATA["batches"].values():
        first = entry["first_run"]["rows"]
        assert len(first) >= 25
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
