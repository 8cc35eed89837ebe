"""A property-based fuzzer of what a submission or a class folder can hand ``course grade``.

Three sources of hostile input, each checked against the grader's invariants:

- *return values* a submission's function might produce (huge integers, deep nesting, lone
  surrogates, NaNs, tensors, modules nested hundreds deep, objects with hostile ``__repr__`` or
  ``__eq__``), sent the way the runner sends them and judged against lesson 01's references;
- *result records* of any shape, as raw lines of the results file (unhashable ids, deep nesting,
  wrong types, garbage bytes, forged states);
- *class folders* with hostile file names (non-UTF-8 bytes, formulas, newlines) and odd files
  (FIFOs, links to /dev/zero, out of the folder, to a classmate; garbage; folders named like
  notebooks).

Invariants: nothing raises; every verdict is well-formed (a known status, clean and bounded
text); a pass is only ever earned (every value the reference's, strictly); the gradebook is
complete (one row per path) and well-formed (CSV without formulas, JSON and HTML in valid UTF-8).

The normal suite runs a bounded, derandomized number of examples; for a longer run:

    MPS_DETECTIVE_FUZZ_EXAMPLES=2000 .venv/bin/pytest tests/test_grader_fuzz.py -q
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from pathlib import Path
from unittest import mock

import nbformat
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nbformat.v4 import new_markdown_cell, new_notebook
from torch import nn

from course_utils.grader import batch, judging, outputs, report, submissions, wire
from course_utils.grader.gradebook import csv_text, json_text
from course_utils.grader.judging import STATUSES
from course_utils.grader.results import read_results
from course_utils.grader.sandbox import RunStatus
from course_utils.grader.text import FORMULA_START, SURROGATE, clean, csv_cell, name_text

LONG = int(os.environ.get("MPS_DETECTIVE_FUZZ_EXAMPLES", "0"))


def fuzz(examples: int):
    """Settings: ``examples`` (derandomized) in the normal suite, the env var's count (random) when set."""
    return settings(max_examples=LONG or examples, derandomize=not LONG, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck), print_blob=True)


@pytest.fixture(scope="module")
def lesson01():
    ready, _ = judging.prepare("01", seed=3)
    return ready


# --- hostile values ---------------------------------------------------------------------------------


class HostileRepr:
    def __repr__(self):
        raise RuntimeError("no repr")

    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


class Everything(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


def nested_module(depth: int) -> nn.Module:
    root = node = nn.Module()
    for _ in range(depth):
        child = nn.Module()
        node.add_module("a", child)
        node = child
    node.weight = nn.Parameter(torch.zeros(1))
    return root


def nested_list(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


TEXT = st.text(st.characters(exclude_categories=()), max_size=30)  # lone surrogates included
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(0, 20_000).map(lambda bits: 2**bits - 1),
    st.integers(0, 20_000).map(lambda bits: -(2**bits)), st.floats(), TEXT, st.binary(max_size=20),
    st.sampled_from([torch.float16, torch.device("cpu"), torch.device("meta"), "cpu", "mps", "not built",
                     6291456, 6291457.0]),
    st.lists(st.floats(width=32), max_size=6).map(torch.tensor), st.builds(HostileRepr),
    st.integers().map(Everything), st.integers(0, 400).map(nested_module),
    st.integers(0, 3000).map(nested_list))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.tuples(inner, inner), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=8)
ERRORS = st.builds(lambda kind, message, mro: {"type": kind, "message": message, "mro": mro},
                   st.one_of(st.sampled_from(["RuntimeError", "ValueError", "NotImplementedError"]), TEXT),
                   TEXT, st.lists(st.one_of(st.sampled_from(["builtins.RuntimeError", "os.system"]), TEXT),
                                  max_size=3))


def sent(value) -> dict:
    """An outcome as the runner sends it: the value encoded, or the error encoding it raised."""
    try:
        return {"value": wire.encode(value)}
    except Exception as err:  # noqa: BLE001 - the runner sends the exception instead
        return {"error": wire.encode_error(err)}


def over_the_wire(record: dict) -> dict | None:
    """The record as the grader reads it back from the results file (None: unreadable line)."""
    try:
        line = json.dumps(record)
    except (TypeError, ValueError, RecursionError):
        return None
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def strictly_equal(expected, got) -> bool:
    if type(expected) is not type(got):
        return False
    if isinstance(expected, torch.Tensor):
        return expected.dtype == got.dtype and expected.shape == got.shape and torch.equal(expected, got)
    if isinstance(expected, list | tuple):
        return len(expected) == len(got) and all(map(strictly_equal, expected, got))
    if isinstance(expected, dict):
        return expected.keys() == got.keys() and all(strictly_equal(expected[k], got[k]) for k in expected)
    return expected == got


def well_formed(verdict) -> None:
    assert verdict.status in STATUSES
    for name in ("detail", "case", "expected", "got", "reason"):
        field = getattr(verdict, name)
        assert field is None or (isinstance(field, str) and not SURROGATE.search(field)), (name, field)
    assert len(verdict.detail) <= 2100 and len(verdict.got or "") <= 250


@fuzz(150)
@given(data=st.data())
def test_hostile_return_values_never_crash_the_judge_or_pass_unearned(lesson01, data):
    prep = data.draw(st.sampled_from(lesson01))
    hostile = data.draw(st.one_of(VALUES.map(sent), ERRORS.map(lambda e: {"error": e})))
    honest = [{"error": wire.encode_error(e.error)} if e.error is not None
              else {"value": wire.encode(e.value)} for e in prep.expected]
    swapped = data.draw(st.lists(st.booleans(), min_size=len(honest), max_size=len(honest)))
    outcomes = [hostile if swap else ok for swap, ok in zip(swapped, honest, strict=True)]
    record = over_the_wire({"exercise": prep.exercise.id, "state": "ran", "outcomes": outcomes,
                            "timeout_at": None})
    verdict = judging.verdict(prep, record, RunStatus(), 5.0)
    well_formed(verdict)
    if not any(swapped):
        assert verdict.status == "pass", verdict  # the reference's own values always pass
    if verdict.status == "pass" and any(swapped):  # earned only if the value is strictly the reference's
        got = judging._received_outcome(record["outcomes"][swapped.index(True)])
        for swap, expected in zip(swapped, prep.expected, strict=True):
            if swap and expected.error is None:
                assert got.error is None and strictly_equal(expected.value, got.value), (
                    clean(f"unearned pass: {got!r} for {expected!r}", 300))


# --- hostile records ----------------------------------------------------------------------------------

JSON = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), TEXT),
                    lambda inner: st.one_of(st.lists(inner, max_size=4),
                                            st.dictionaries(TEXT, inner, max_size=4)), max_leaves=15)
IDS = ["01.choose_device", "01.same_device", "01.batch_bytes", "01.read_report"]
RECORDS = st.fixed_dictionaries({}, optional={
    "exercise": st.one_of(st.sampled_from(IDS), JSON), "state": st.one_of(st.sampled_from(["ran", "missing",
                                                                                            "error"]), JSON),
    "outcomes": st.one_of(JSON, st.lists(st.one_of(JSON, st.fixed_dictionaries({"value": JSON}),
                                                   st.fixed_dictionaries({"error": JSON})), max_size=30)),
    "timeout_at": JSON, "detail": JSON, "kind": JSON, "problems": JSON,
    "event": st.one_of(st.sampled_from(["cells", "done"]), JSON)})
LINES = st.lists(st.one_of(
    RECORDS.map(lambda r: json.dumps(r).encode()), st.binary(max_size=80),
    st.integers(0, 6000).map(lambda depth: ('{"exercise": "01.batch_bytes", "state": "ran", "outcomes": '
                                            + "[" * depth + "]" * depth + "}").encode())), max_size=10)


def check_gradebook(rows, ids: list[str], count: int) -> None:
    book = csv_text(rows, ids).encode("utf-8").decode("utf-8")
    table = list(csv.reader(io.StringIO(book)))
    assert len(table) == count + 1 and all(len(r) == len(ids) + 5 for r in table)
    for row in table[1:]:
        assert not row[0].startswith(FORMULA_START) and not row[-1].startswith(FORMULA_START)
    meta = {"status": "complete", "seed": 1}
    doc = json.loads(json_text(rows, ids, meta).encode("utf-8"))
    assert len(doc["submissions"]) == count
    page = report.html_page(report.summarise(rows, ids), rows, meta, chart=False)
    page.encode("utf-8")


@fuzz(100)
@given(lines=LINES, returncode=st.sampled_from([None, 0, 1, -9, -24]), timed_out=st.booleans(),
       died=st.booleans(), problem=st.one_of(st.none(), TEXT), stdout=TEXT)
def test_hostile_records_give_a_complete_gradebook_and_no_pass(lesson01, lines, returncode, timed_out, died,
                                                              problem, stdout):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "results.jsonl"
        path.write_bytes(b"\n".join(lines))
        records, read_problem = read_results(path, cap=1 << 20)
    status = RunStatus(records=records, returncode=returncode, timed_out=timed_out, supervisor_died=died,
                       problem=problem or read_problem, stdout=stdout)
    sub = submissions.Submission(Path("/class/01_x.ipynb"), "01_x.ipynb", lesson="01")
    row = batch._safe_row(sub, lesson01, status, 5.0)
    assert set(row.verdicts) == set(IDS)
    for verdict in row.verdicts.values():
        well_formed(verdict)
        assert verdict.status != "pass"  # no record here holds the reference's values for every case
    check_gradebook([row], IDS, 1)


# --- hostile class folders ------------------------------------------------------------------------------

NAMES = st.tuples(st.sampled_from([b"", b"01_", b"=", b"+01_", b"-", b"@01_", b"\t", b"01_\n", b"'=",
                                   b"\\x01", b"01_\\xff", b"\\", b"'"]),
                  st.binary(min_size=1, max_size=30).filter(lambda b: b"/" not in b and b"\0" not in b)
                  ).map(lambda parts: parts[0] + parts[1] + b".ipynb")
KINDS = st.sampled_from(["notebook", "garbage", "empty", "deep", "bad_metadata", "fifo", "dev_zero",
                         "classmate", "outside", "folder"])


def make_entry(folder: Path, name: bytes, kind: str, outside: Path, classmate: Path | None) -> bool:
    """Create one path of the class; returns whether it must get a row (a folder gets none)."""
    path = Path(os.fsdecode(bytes(folder) + b"/" + name))
    if kind == "notebook" or (kind == "classmate" and classmate is None):
        nbformat.write(new_notebook(cells=[new_markdown_cell("hi")]), path)
    elif kind == "bad_metadata":
        path.write_text(json.dumps({"cells": [], "metadata": {"mps_detective": [1], "kernelspec": 5},
                                    "nbformat": 4, "nbformat_minor": 5}))
    elif kind == "garbage":
        path.write_bytes(b"\xff\xfe{" + name)
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "deep":
        path.write_bytes(b'{"cells": ' + b"[" * 50_000 + b"]" * 50_000 + b"}")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev_zero":
        path.symlink_to("/dev/zero")
    elif kind == "classmate":
        path.symlink_to(classmate)
    elif kind == "outside":
        path.symlink_to(outside)
    else:
        path.mkdir()
        return False
    return True


@fuzz(50)
@given(entries=st.lists(st.tuples(NAMES, KINDS), min_size=1, max_size=6, unique_by=lambda e: e[0]))
def test_hostile_class_folders_give_one_well_formed_row_per_path(lesson01, entries):
    def prepare(lesson, seed):  # lesson 01's cases, drawn once for the module
        return (lesson01, {}) if lesson == "01" else ([], {})

    with tempfile.TemporaryDirectory() as tmp, mock.patch.object(judging, "prepare", prepare), \
            mock.patch.object(report, "chart_png", lambda stats: b"png"):
        cls, outside = Path(tmp) / "class", Path(tmp) / "outside.ipynb"
        cls.mkdir()
        nbformat.write(new_notebook(cells=[]), outside)
        made, classmate = [], None
        for name, kind in entries:
            if make_entry(cls, name, kind, outside, classmate):
                made.append(name)
                classmate = classmate or (cls / os.fsdecode(name) if kind == "notebook" else None)
        if not made:
            return
        options = batch.Options(seed=1, progress=False)
        graded = batch.grade([cls], options)
        text = outputs.GradebookFiles(Path(tmp) / "out" / "gradebook.csv", Path(tmp) / "out" / "d.json"
                                      ).final(graded, options)
        text.encode("utf-8")
        assert graded.status == "complete" and graded.graded == len(made)
        names = sorted(csv_cell(name_text(os.fsdecode(n))) for n in made)
        assert len(set(names)) == len(made)  # distinct files, distinct shown names
        book = (Path(tmp) / "out" / "gradebook.csv").read_bytes().decode("utf-8")
        table = list(csv.reader(io.StringIO(book)))
        assert sorted(r[0] for r in table[1:]) == names
        assert all(r.status != "pass" for row in graded.rows for r in row.verdicts.values())
        check_gradebook(graded.rows, graded.ids, len(made))
        json.loads((Path(tmp) / "out" / "d.json").read_bytes().decode("utf-8"))
        (Path(tmp) / "out" / "gradebook.html").read_bytes().decode("utf-8")
