"""Is the taxonomy page of real training bugs true to its data: at least 100 linked reports, one class
each, every kind of finding it credits to ``course watch`` real, every drill it names real, every
script pair written from a report that is in the data, and the page's tables generated from it?"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from course_utils import drills
from course_utils.toolkit.watch.kinds import KINDS

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "benchmarks"))

import watch_taxonomy  # noqa: E402

DATA = watch_taxonomy.load()


def test_at_least_100_distinct_linked_reports_each_in_a_known_class():
    reports = DATA["reports"]
    links = [r["link"] for r in reports]
    assert len(reports) >= 100 and len(set(links)) == len(links)
    assert all(re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+", link) for link in links)
    assert {r["class"] for r in reports} == set(DATA["classes"])
    assert all(r["watchable"] == DATA["classes"][r["class"]]["watchable"] for r in reports)


def test_what_the_page_credits_to_course_watch_and_the_drills_exists():
    ids = {d.id for d in drills.all_drills()}
    for name, c in DATA["classes"].items():
        assert c["watchable"] in ("yes", "partly", "no"), name
        assert set(c["kinds"]) <= set(KINDS), name
        assert not (c["watchable"] == "no" and c["kinds"]), name
        assert set(c["drills"]) <= ids, name


def test_every_script_pair_written_from_a_report_cites_one_in_the_data():
    links = {r["link"] for r in DATA["reports"]}
    cited = []
    for script in sorted((ROOT / "tests" / "benchmarks" / "watch_scripts").glob("*_bug.py")):
        found = re.search(r"^Written from: (\S+)$", script.read_text(encoding="utf-8"), re.M)
        if found:
            cited.append(found.group(1))
    assert len(cited) >= 25 and set(cited) <= links


def test_the_page_tables_are_generated_from_the_data():
    page = watch_taxonomy.PAGE.read_text(encoding="utf-8")
    assert watch_taxonomy.render(DATA) in page
    counts = dict(watch_taxonomy.counts(DATA))
    assert sum(counts.values()) == len(DATA["reports"])
    assert json.loads(watch_taxonomy.DATA.read_text(encoding="utf-8")) == DATA
