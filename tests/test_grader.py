"""Does ``course grade`` read, judge and report safely? (unit tests: no submission processes)

The sandbox is tested in test_grader_sandbox.py and the whole fixture class, end to end, in
test_grader_class.py.
"""

from __future__ import annotations

import collections
import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import torch
from nbformat.v4 import new_code_cell, new_notebook
from torch import nn

from course_utils import cli
from course_utils.core.exercise import Case, Exercise
from course_utils.core.files import write_atomically
from course_utils.grader import judging, report, runner, wire
from course_utils.grader.gradebook import Row, csv_text, json_text
from course_utils.grader.judging import Prepared, Verdict
from course_utils.grader.sandbox import RunStatus, pickle_cases
from course_utils.grader.submissions import discover, lesson_of, load
from tests.conftest import ROOT

GRADER = ROOT / "course_utils" / "grader"


def roundtrip(value):
    return wire.decode(json.loads(json.dumps(wire.encode(value))))


# --- wire: what comes back from a submission ----------------------------------------------------


@pytest.mark.parametrize("value", [
    None, True, 0, -7, 2**80, 1.5, "text", b"\x00bytes", 1 + 2j, (1, "a"), [1, [2, (3,)]],
    {"a": 1, 2: [3], (4, 5): None}, {1, 2}, frozenset({"x"}), torch.float16, torch.bfloat16,
    torch.device("cpu"), torch.device("meta"), torch.Size([2, 3])])
def test_do_plain_values_survive_the_trip_back(value):
    back = roundtrip(value)
    assert back == value and type(back) is type(value)


@pytest.mark.parametrize("make", [
    lambda: torch.arange(12.0).reshape(3, 4).t(),  # transposed: strides kept
    lambda: torch.arange(10)[3:8],  # storage offset kept
    lambda: torch.ones(3).expand(4, 3),  # stride 0
    lambda: torch.zeros(0, 5),
    lambda: torch.tensor(3.5, dtype=torch.float64),
    lambda: torch.tensor([True, False]),
    lambda: torch.arange(6, dtype=torch.bfloat16),
    lambda: torch.tensor([1 + 2j], dtype=torch.complex64).conj(),
    lambda: torch.zeros(2, 3, device="meta").t(),
])
def test_do_tensors_keep_values_dtype_shape_strides_and_offset(make):
    t = make()
    back = roundtrip(t)
    assert (back.dtype, back.shape, back.stride(), back.device) == (t.dtype, t.shape, t.stride(), t.device)
    assert back.storage_offset() == t.storage_offset() or t.is_conj()
    if t.device.type != "meta":
        assert torch.equal(back, t.resolve_conj())


def test_do_grad_flags_parameters_and_modules_come_back_as_data():
    assert roundtrip(torch.ones(2, requires_grad=True)).requires_grad
    assert isinstance(roundtrip(nn.Parameter(torch.ones(2))), nn.Parameter)
    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2)).eval()
    model[0].weight.requires_grad_(False)
    back = roundtrip(model)
    assert type(back).__name__ == "Sequential" and not back.training
    assert [(n, p.requires_grad) for n, p in back.named_parameters()] == [
        (n, p.requires_grad) for n, p in model.named_parameters()]
    assert torch.equal(back.get_buffer("1.running_var"), model[1].running_var)


def test_does_an_object_that_equals_everything_come_back_equal_to_nothing():
    class Agreeable(str):
        def __eq__(self, other):
            return True

        __hash__ = str.__hash__

    class Everything(int):
        def __eq__(self, other):
            return True

        __hash__ = int.__hash__

    class Chameleon:
        def __eq__(self, other):
            return True

        def __repr__(self):
            raise RuntimeError("no repr")

    assert roundtrip(Agreeable("")) == "" and type(roundtrip(Agreeable(""))) is str
    assert roundtrip(Everything(-1)) == -1
    back = roundtrip(Chameleon())
    assert isinstance(back, wire.Opaque) and back != back.text and type(back).__name__ == "Chameleon"
    assert repr(back) == "<unprintable Chameleon>"
    assert roundtrip(nn.ReLU) != nn.ReLU  # a class is not data


def test_does_a_stand_in_exception_keep_its_nearest_known_base_and_message():
    class LearnerError(KeyError):
        pass

    def back(err):
        return wire.decode_error(json.loads(json.dumps(wire.encode_error(err))))

    original = LearnerError("no such key")
    err = back(original)
    assert isinstance(err, KeyError) and type(err).__name__ == "LearnerError" and str(err) == str(original)
    assert isinstance(back(torch.linalg.LinAlgError("singular")), RuntimeError)
    assert isinstance(back(UnicodeDecodeError("utf-8", b"x", 0, 1, "bad")), ValueError)
    assert isinstance(back(SystemExit(3)), SystemExit)
    forged = {"type": "Pwn", "mro": ["os.system", "subprocess.Popen", "builtins.ValueError"], "message": "m"}
    assert type(wire.decode_error(forged)).__mro__[1] is ValueError  # never imports a named module
    assert type(wire.decode_error({"type": "not a name!", "mro": 5})).__name__ == "SubmissionError"


@pytest.mark.parametrize("bad", [
    [1, 2], {"t": "pickle", "v": "cos\nsystem"}, {"t": "dtype", "name": "FloatStorage"},
    {"t": "tensor", "dtype": "float32", "shape": [2**25, 2**25], "stride": [0, 0], "data": "AAAAAA=="},
    {"t": "tensor", "dtype": "float32", "shape": [4], "stride": [1], "data": "AAAA"},
    {"t": "tensor", "dtype": "float32", "shape": [1], "stride": [1], "offset": 2**30, "data": "AAAAAA=="},
    {"t": "tensor", "dtype": "float32", "shape": [-1], "stride": [1]},
    json.loads('{"t": "list", "v": [' * 100 + "]}" * 100),
    {"t": "module", "type": "M", "params": [["a..b", {"t": "tensor"}]], "buffers": []},
    {"t": "int", "hex": "0x" + "f" * 5000},
])
def test_does_decoding_refuse_malformed_or_oversized_values(bad):
    with pytest.raises(wire.WireError):
        wire.decode(bad)


def test_does_the_grading_process_never_unpickle_what_a_submission_sends():
    for path in GRADER.glob("*.py"):
        text = path.read_text()
        if path.name != "runner.py":  # the submission's side loads the grader's own inputs
            assert not re.search(r"pickle\.loads?\(|Unpickler|torch\.load|marshal\.loads", text), path.name
    assert "weights_only" not in (GRADER / "wire.py").read_text()


# --- reading submissions ------------------------------------------------------------------------


def write_nb(path: Path, *sources: str, **meta) -> Path:
    nb = new_notebook(cells=[new_code_cell(s) for s in sources])
    nb.metadata.update(meta)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def test_are_folders_searched_deeply_with_stable_relative_names(tmp_path):
    write_nb(tmp_path / "class" / "bob" / "01_mps_setup.ipynb")
    write_nb(tmp_path / "class" / "alice" / "01_mps_setup.ipynb")
    write_nb(tmp_path / "class" / "alice" / ".ipynb_checkpoints" / "01_mps_setup-checkpoint.ipynb")
    extra = write_nb(tmp_path / "late" / "01_carol.ipynb")
    found = discover([tmp_path / "class", extra, tmp_path / "class" / "bob" / "01_mps_setup.ipynb"])
    assert [name for _, name in found] == ["class/alice/01_mps_setup.ipynb",
                                            "class/bob/01_mps_setup.ipynb", "late/01_carol.ipynb"]
    with pytest.raises(Exception, match="no such file or folder"):
        discover([tmp_path / "nowhere"])


def test_is_the_lesson_read_from_the_name_the_metadata_or_the_checks(tmp_path):
    assert lesson_of(Path("alice_05_non_contiguous_tensors.ipynb")) == "05"
    origin = {"generated_from": "solutions/02_unified_memory.ipynb"}
    meta = write_nb(tmp_path / "alice.ipynb", mps_detective=origin)
    assert lesson_of(meta, nbformat.read(meta, as_version=4)) == "02"
    checks = write_nb(tmp_path / "bob.ipynb", "x = 1", 'check("04.prefix_sum", f)')
    assert lesson_of(checks, nbformat.read(checks, as_version=4)) == "04"
    unknown = load(write_nb(tmp_path / "carol.ipynb", "x = 1"), "carol")
    assert unknown.lesson is None and unknown.note.startswith("cannot tell the lesson")
    assert load(tmp_path / "carol.ipynb", "carol", lesson="01").lesson == "01"


@pytest.mark.parametrize("content, words", [
    (b"this is not JSON {", "not valid JSON"),
    (b'{"hello": "world"}', "JSON but not a notebook"),
    (b'{"cells": "nope", "metadata": {}, "nbformat": 4, "nbformat_minor": 5}', "malformed notebook"),
    (b'{"cells": [], "metadata": {}, "nbformat": 99, "nbformat_minor": 0}', "malformed notebook"),
    (b"\xff\xfe\x00garbage", "not a notebook"),
    (b"[" * 100_000 + b"]" * 100_000, "JSON nested deeper than 200 levels: not read"),
])
def test_is_a_broken_notebook_malformed_with_its_reason_never_an_exception(tmp_path, content, words):
    path = tmp_path / "01_x.ipynb"
    path.write_bytes(content)
    sub = load(path, "01_x.ipynb")
    assert words in sub.malformed and sub.lesson == "01" and sub.cells == []


def test_is_an_oversized_notebook_malformed_without_being_read(tmp_path, monkeypatch):
    monkeypatch.setattr("course_utils.grader.submissions.MAX_NOTEBOOK_BYTES", 10)
    sub = load(write_nb(tmp_path / "01_big.ipynb", "x = 1"), "01_big.ipynb")
    assert sub.malformed.startswith("too large")


def test_are_only_non_empty_code_cells_handed_on(tmp_path):
    nb = new_notebook(cells=[new_code_cell("a = 1"), nbformat.v4.new_markdown_cell("# no"),
                             new_code_cell("   \n"), new_code_cell("b = 2")])
    nbformat.write(nb, tmp_path / "01_x.ipynb")
    assert load(tmp_path / "01_x.ipynb", "x").cells == ["a = 1", "b = 2"]


# --- the submission's side, without a process ---------------------------------------------------


def test_is_each_exercises_function_found_from_its_check_call():
    cells = ['check("01.choose_device", pick)', "course_utils.check('01.batch_bytes', answer=mine)",
             "check(exercise_id='01.read_report', answer=lambda r: r)", "check('01.same_device', a)",
             "check('01.same_device', b)  # the last call counts", "def broken(:", "%time x = 1",
             "check(name, fn)"]
    assert runner.answer_names(cells) == {"01.choose_device": "pick", "01.batch_bytes": "mine",
                                          "01.read_report": "lambda r: r", "01.same_device": "b"}


@pytest.mark.parametrize("source, name, expected", [
    ("def f():\n    pass", "f", True), ("import numpy as f", "f", True), ("from m import f", "f", True),
    ("f = lambda: 1", "f", True), ("g = f", "f", False), ("def f(:", "f", True), ("x = 1 +", "f", False),
    ("!pip install f", "f", False),
])
def test_does_defines_tell_which_names_a_cell_binds(source, name, expected):
    assert runner.defines(source, name) is expected


def test_do_later_cells_run_after_an_error_and_is_each_problem_recorded():
    ns = {"__name__": "__main__"}
    problems = runner.run_cells(["a = 1", "raise ValueError('boom')", "import sys\nsys.exit(2)",
                                 "def f(:", "b = a + 1"], ns, step=30)
    assert ns["b"] == 2
    assert [(p["cell"], p["error"]["type"]) for p in problems] == [
        (2, "ValueError"), (3, "SystemExit"), (4, "SyntaxError")]


def test_is_a_missing_function_missing_but_one_a_broken_cell_defines_an_error():
    sources = ["import nowhere\ndef f(x):\n    return x", "g = 3"]
    ns: dict = {}
    problems = runner.run_cells(sources, ns, step=30)
    fn, rec = runner.find_answer("f", ns, sources, problems, step=30)
    assert fn is None and rec["state"] == "error" and "ModuleNotFoundError" in rec["detail"]
    assert runner.find_answer("h", ns, sources, problems, 30)[1]["state"] == "missing"
    assert "not a function" in runner.find_answer("g", ns, sources, problems, 30)[1]["detail"]
    fn, rec = runner.find_answer("(lambda x: x)", ns, sources, problems, 30)
    assert rec is None and fn(4) == 4


def test_does_each_call_get_fresh_copies_of_its_inputs():
    shared = torch.zeros(2)

    def mutates(t):
        t.add_(1)
        return t.sum().item()

    result = runner.call_all(mutates, [((shared,), {}), ((shared,), {})], step=30)
    assert [o["value"] for o in result["outcomes"]] == [2.0, 2.0] and result["timeout_at"] is None
    assert shared.sum() == 0
    failing = runner.call_all(lambda: 1 / 0, [((), {})], step=30)
    assert failing["outcomes"][0]["error"]["type"] == "ZeroDivisionError"


@pytest.mark.slow
def test_is_the_reference_out_of_reach_of_import_and_open_in_the_submissions_process(tmp_path):
    code = """
import importlib, sys
from course_utils.grader.runner import install_guard
from course_utils.grader.sandbox import course_paths
install_guard(course_paths()[1])
sys.meta_path[:] = list(sys.meta_path)
results = []
def patch_code():
    install_guard.__code__ = (lambda blocked_dirs: None).__code__

for attempt in (lambda: importlib.import_module("course_utils.bank"),
                lambda: __import__("course_utils.bank.lesson01"),
                lambda: open(course_paths()[1][0] + "/lesson01/batch_bytes.py").read(),
                lambda: __import__("course_utils.learner.checking").learner.checking.get_exercise(
                    "01.batch_bytes"),
                lambda: __import__("gc").get_objects(), patch_code):
    try:
        attempt()
        results.append("reached")
    except (ImportError, PermissionError) as err:
        results.append(type(err).__name__)
sys.addaudithook(lambda *a: None)  # adding hooks is allowed; removing ours is not possible
print(json.dumps([results, "course_utils.bank" in sys.modules]))
"""
    out = subprocess.run([sys.executable, "-c", "import json\n" + code], capture_output=True, text=True,
                         timeout=120)
    results, bank_loaded = json.loads(out.stdout)
    assert set(results) <= {"ImportError", "PermissionError"} and len(results) == 6, out.stderr
    assert not bank_loaded


# --- judging in the grading process -------------------------------------------------------------


@pytest.fixture(scope="module")
def lesson01():
    ready, skipped = judging.prepare("01", seed=3)
    assert skipped == {}
    return {p.exercise.id: p for p in ready}


def encoded(values):
    return [{"value": wire.encode(v)} for v in values]


def ran(prep, values, **extra):
    return {"exercise": prep.exercise.id, "state": "ran", "outcomes": values, "timeout_at": None, **extra}


def reference_values(prep):
    return [o.value for o in prep.expected]


def test_does_a_full_set_of_right_values_pass(lesson01):
    prep = lesson01["01.batch_bytes"]
    assert judging.verdict(prep, ran(prep, encoded(reference_values(prep))), RunStatus(), 5).status == "pass"


def test_is_the_first_wrong_value_a_fail_naming_case_expected_and_got(lesson01):
    prep = lesson01["01.batch_bytes"]
    values = reference_values(prep)
    values[1] += 1
    v = judging.verdict(prep, ran(prep, encoded(values)), RunStatus(), 5)
    assert (v.status, v.case) == ("fail", "the same batch in float16")
    assert (v.expected, v.got) == ("6291456", "6291457")
    assert v.reason == "wrong on 'the same batch in float16'"


def test_is_an_exception_where_a_value_was_expected_an_error(lesson01):
    prep = lesson01["01.batch_bytes"]
    raised = [{"error": wire.encode_error(TypeError("bad shape"))}]
    v = judging.verdict(prep, ran(prep, raised), RunStatus(), 5)
    assert (v.status, v.detail, v.reason) == ("error", "TypeError: bad shape", "raises TypeError")
    stub = [{"error": wire.encode_error(NotImplementedError("01.batch_bytes: your code here"))}]
    assert judging.verdict(prep, ran(prep, stub), RunStatus(), 5).reason == "not solved"


def test_is_an_expected_error_judged_by_the_exercises_own_judge(lesson01):
    prep = lesson01["01.same_device"]
    outcomes = []
    for expected in prep.expected:
        if expected.error is None:
            outcomes.append({"value": wire.encode(expected.value)})
        else:
            outcomes.append({"error": wire.encode_error(type("DeviceError", (RuntimeError,), {})(
                str(expected.error)))})
    assert judging.verdict(prep, ran(prep, outcomes), RunStatus(), 5).status == "pass"
    vague = [o if "value" in o else {"error": wire.encode_error(RuntimeError("mismatch"))} for o in outcomes]
    assert judging.verdict(prep, ran(prep, vague), RunStatus(), 5).status == "fail"


def test_is_a_run_that_stopped_part_way_a_timeout_unless_an_earlier_case_failed(lesson01):
    prep = lesson01["01.batch_bytes"]
    values = reference_values(prep)[:3]
    v = judging.verdict(prep, ran(prep, encoded(values), timeout_at=3), RunStatus(), 2.5)
    assert v.status == "timeout" and v.case == prep.cases[3].label and "2.5 s" in v.detail
    values[0] = -1
    assert judging.verdict(prep, ran(prep, encoded(values), timeout_at=3), RunStatus(), 2.5).status == "fail"
    short = judging.verdict(prep, ran(prep, encoded(reference_values(prep)[:3])), RunStatus(), 5)
    assert short.status == "error"


@pytest.mark.parametrize("record, status, expected", [
    ({"state": "missing", "detail": "no function named f"}, RunStatus(), "missing"),
    ({"state": "error", "detail": "code cell 3 raised X", "kind": "X in the cell"}, RunStatus(), "error"),
    ({"state": "ran", "outcomes": "nope"}, RunStatus(), "error"),
    ({"state": "ran", "outcomes": [{"value": {"t": "pickle"}}]}, RunStatus(), "error"),
    ({"state": "ran", "outcomes": [{"value": 1}] * 999}, RunStatus(), "error"),
    (None, RunStatus(timed_out=True, returncode=-9), "timeout"),
    (None, RunStatus(returncode=-24), "timeout"),  # SIGXCPU: its CPU time ran out
    (None, RunStatus(supervisor_died=True), "error"),
    (None, RunStatus(returncode=0), "error"),
])
def test_does_every_other_record_get_a_verdict(lesson01, record, status, expected):
    assert judging.verdict(lesson01["01.batch_bytes"], record, status, 5).status == expected


def test_is_a_judge_that_crashes_on_a_strange_value_a_fail_not_a_crash(lesson01):
    prep = lesson01["01.same_device"]
    weird = [{"value": {"t": "opaque", "type": "Thing", "repr": "Thing()"}}]
    assert judging.verdict(prep, ran(prep, weird), RunStatus(), 5).status == "fail"


def fake_exercise(reference, cases, judge=None, mutants=None) -> Exercise:
    return Exercise(id="99.fake", title="fake", reference=reference, fixed=lambda: cases, judge=judge,
                    mutants=mutants or {})


def prepared(ex: Exercise) -> Prepared:
    from course_utils.core.exercise import run

    cases = ex.cases(0)
    return Prepared(ex, cases, [run(ex.reference, c) for c in cases])


def test_is_an_exercise_that_cannot_be_graded_across_processes_left_out_with_a_reason():
    assert "cannot be sent" in judging.batch_problem(prepared(fake_exercise(
        lambda f: f(1), [Case("a lambda as input", (lambda x: x,))])))
    point = collections.namedtuple("Point", "x y")
    named = fake_exercise(lambda: point(1, 2), [Case("x")],
                          judge=lambda e, g, c: None if isinstance(g.value, point) else "not a Point")
    assert "does not survive" in judging.batch_problem(prepared(named))
    # a mutant rejected in-process but accepted after the trip back would pass in batch: refuse
    plain_one = fake_exercise(lambda: 1, [Case("x")],
                              judge=lambda e, g, c: None if type(g.value) is int and g.value == 1 else "no")
    assert judging.batch_problem(prepared(plain_one)) is None
    leaky = fake_exercise(lambda: 1, [Case("x")], judge=plain_one.judge,
                          mutants={"returns an int subclass": lambda: type("MyInt", (int,), {})(1)})
    assert "known wrong answer 'returns an int subclass'" in judging.batch_problem(prepared(leaky))
    # a judge that reads what the call left behind in its own process cannot judge across processes
    seen: list[str] = []

    def watched(tag):
        def fn(x):
            seen.append(tag)
            return x
        return fn

    stateful = fake_exercise(watched("right"), [Case("x", (1,))], mutants={"cheats": watched("wrong")},
                             judge=lambda e, g, c: "used the wrong op" if seen[-1] == "wrong" else None)
    assert "known wrong answer 'cheats'" in judging.batch_problem(prepared(stateful))
    assert seen == ["right"]  # the self-test ran the answers in a copy of this process


class KeptByCopiesLostByPickles:
    """A case input a deep copy keeps whole but a pickle loses ``extra`` of (as a plain module's
    pickle loses ``.grad``)."""

    def __init__(self, extra: int = 0):
        self.extra = extra

    def __deepcopy__(self, memo):
        return type(self)(self.extra)

    def __reduce__(self):
        return type(self), ()


def test_is_a_wrong_answer_only_an_input_the_pickle_loses_exposes_caught_by_the_self_test():
    box = [Case("an input carrying extra=5", (KeptByCopiesLostByPickles(5),))]
    honest = fake_exercise(lambda b: 1, box, mutants={"wrong by 1": lambda b: 2})
    assert judging.batch_problem(prepared(honest)) is None
    lossy = fake_exercise(lambda b: 1, box, mutants={"adds extra": lambda b: b.extra + 1})
    assert "known wrong answer 'adds extra'" in judging.batch_problem(prepared(lossy))


def test_are_the_inputs_refused_when_the_submissions_process_would_need_the_bank():
    from course_utils.bank.lesson01.batch_bytes import batch_bytes
    from course_utils.drills.memory import training_footprint
    from course_utils.labs.case_inputs import FakeDevice, LinearKeepingGrad, make_loop

    with pytest.raises(ValueError, match="course_utils.bank"):
        pickle_cases({"01.x": [((batch_bytes,), {})]})
    with pytest.raises(ValueError, match="course_utils.drills"):  # a case input lives in case_inputs
        pickle_cases({"07.x": [((training_footprint,), {})]})
    assert isinstance(pickle_cases({"01.x": [((torch.zeros(2), nn.Linear(2, 2)), {"k": torch.float16})]}),
                      bytes)
    case_inputs = (FakeDevice(0.1, 0.2).run, LinearKeepingGrad(2, 2), make_loop(["n = len(x)"], "loop"))
    assert b"course_utils.labs.case_inputs" in pickle_cases({"03.x": [(case_inputs, {})]})


@pytest.mark.slow
def test_do_the_cases_of_every_lesson_unpickle_where_the_bank_is_off_limits(tmp_path):
    """Every case of every exercise (those graded only in the learner's kernel too) is sent as
    ``course grade`` sends it, and loads in a process that refuses to import the bank."""
    import pickle

    from course_utils.learner.lessons import LESSONS

    blobs = {ex.id: pickle_cases({ex.id: [(c.args, c.kwargs) for c in ex.cases(11)]})
             for lesson in LESSONS for ex in judging.lesson_exercises(lesson.number)}
    (tmp_path / "blobs.pkl").write_bytes(pickle.dumps(blobs))
    code = """
import json, pickle, sys
from course_utils.grader.runner import install_guard, load_cases
from course_utils.grader.sandbox import course_paths
install_guard(course_paths()[1])
with open(sys.argv[1], "rb") as fh:
    blobs = pickle.load(fh)
loaded = {eid: len(load_cases(blob)[eid]) for eid, blob in blobs.items()}
print(json.dumps([loaded, sorted(m for m in sys.modules if m.startswith("course_utils.bank"))]))
"""
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "blobs.pkl")], capture_output=True,
                         text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    loaded, bank_modules = json.loads(out.stdout.splitlines()[-1])
    from course_utils import bank

    assert loaded == {ex_id: len(bank.get(ex_id).cases(11)) for ex_id in bank.ids()}
    assert bank_modules == []


def test_can_every_exercise_be_graded_in_batch_but_those_that_watch_their_process():
    from course_utils.learner.lessons import LESSONS

    left_out = {}
    for lesson in LESSONS:
        ready, skipped = judging.prepare(lesson.number, seed=11)
        assert len(ready) + len(skipped) == len(judging.lesson_exercises(lesson.number))
        left_out.update(skipped)
    capstone = ["08.capstone_loss", "08.capstone_frozen", "08.capstone_fallback", "08.capstone_syncs"]
    assert list(left_out) == ["03.honest_timer", "03.log_every_n", "04.prefix_sum", *capstone]
    assert "the device's own record" in left_out["03.honest_timer"]
    assert all("made-up report" in left_out[name] for name in capstone)
    assert "how often the answer reads the losses to the host" in left_out["03.log_every_n"]
    assert "watches which ops the answer runs" in left_out["04.prefix_sum"]
    assert judging.prepare("42", seed=1) == ([], {})
    assert judging.prepare("01", seed=5)[0][0].answer_name == "choose_device"


# --- gradebook and report -----------------------------------------------------------------------


def rows() -> list[Row]:
    ok, bad = Verdict("pass"), Verdict("fail", "x", case="c", reason="wrong on 'c'")
    return [
        Row("alice.ipynb", "01", {"01.a": ok, "01.b": bad}),
        Row("bob.ipynb", "01", {"01.a": bad, "01.b": Verdict("timeout", reason="timeout")}, note="slow"),
        Row("<script>.ipynb", "00", {"00.z": ok}),
    ]


def test_does_the_csv_have_a_row_per_submission_and_a_column_per_exercise():
    table = list(csv.reader(io.StringIO(csv_text(rows(), ["00.z", "01.a", "01.b"]))))
    assert table[0] == ["submission", "lesson", "00.z", "01.a", "01.b", "total", "out_of", "note"]
    assert table[1] == ["alice.ipynb", "01", "", "pass", "fail", "1", "2", ""]
    assert table[2] == ["bob.ipynb", "01", "", "fail", "timeout", "0", "2", "slow"]
    doc = json.loads(json_text(rows(), ["01.a"], {"seed": 4}))
    assert doc["seed"] == 4 and doc["submissions"][0]["results"]["01.b"]["case"] == "c"


def test_is_the_gradebook_replaced_atomically_or_left_as_it_was(tmp_path, monkeypatch):
    path = tmp_path / "gradebook.csv"
    write_atomically(path, "old\n")
    write_atomically(path, "new\n")
    assert path.read_text() == "new\n"

    def broken(*args):
        raise OSError("disk full")

    monkeypatch.setattr("course_utils.core.files.os.replace", broken)
    with pytest.raises(OSError):
        write_atomically(path, "newer\n")
    assert path.read_text() == "new\n" and [p.name for p in tmp_path.iterdir()] == ["gradebook.csv"]


def test_does_the_report_give_pass_rates_and_the_most_common_failure():
    stats = report.summarise(rows(), ["00.z", "01.a", "01.b"])
    assert [(s.exercise_id, s.passed, s.graded) for s in stats] == [("00.z", 1, 1), ("01.a", 1, 2),
                                                                   ("01.b", 0, 2)]
    assert stats[1].common_failure == "wrong on 'c' (1)"
    assert stats[2].common_failure == "timeout (1)"  # ties: alphabetical, so the report is stable
    text = report.text_table(stats)
    assert "01.a" in text and "50%" in text
    page = report.html_page(stats, rows(), {"seed": 1})
    assert "data:image/png;base64,iVBOR" in page and "&lt;script&gt;" in page and "<script>" not in page


# --- the command --------------------------------------------------------------------------------


def test_does_course_grade_write_gradebook_report_and_json_for_a_class_without_code(tmp_path, capsys):
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "01_broken.ipynb").write_text("{ not json")
    write_nb(tmp_path / "class" / "01_empty.ipynb")
    out = tmp_path / "out" / "gradebook.csv"
    code = cli.main(["grade", str(tmp_path / "class"), "--out", str(out), "--json",
                     str(tmp_path / "out" / "details.json"), "--seed", "5"])
    assert code == 0
    table = list(csv.reader(out.open()))
    assert [r[0] for r in table[1:]] == ["01_broken.ipynb", "01_empty.ipynb"]
    assert set(table[1][2:6]) == {"malformed"} and set(table[2][2:6]) == {"missing"}
    assert (tmp_path / "out" / "gradebook.html").exists()
    assert json.loads((tmp_path / "out" / "details.json").read_text())["seed"] == 5
    printed = capsys.readouterr().out
    assert "01.batch_bytes" in printed and "--seed 5 reproduces" in printed


@pytest.mark.parametrize("args, words", [
    (["--jobs", "0"], "--jobs must be"), (["--lesson", "one"], "--lesson takes"),
    (["--timeout", "0"], "--timeout"),
])
def test_does_course_grade_refuse_bad_options_in_one_line(tmp_path, capsys, args, words):
    assert cli.main(["grade", str(tmp_path), "--out", str(tmp_path / "g.csv"), *args]) == 2
    assert words in capsys.readouterr().err


def test_does_course_grade_say_so_when_there_is_nothing_to_grade(tmp_path, capsys):
    assert cli.main(["grade", str(tmp_path), "--out", str(tmp_path / "g.csv")]) == 2
    assert "no notebooks" in capsys.readouterr().err
    assert not (tmp_path / "g.csv").exists()


def test_are_the_cases_drawn_again_identically_from_the_same_seed():
    from course_utils.core.compare import describe_value

    def drawn(seed):
        ready, _ = judging.prepare("01", seed)
        return [[(c.label, describe_value(e.value if e.error is None else e.error))
                 for c, e in zip(p.cases, p.expected, strict=True)] for p in ready]

    assert drawn(9) == drawn(9) != drawn(10)
