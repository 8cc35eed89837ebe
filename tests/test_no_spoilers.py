"""Does the course keep its answers back until the learner has tried? No notebook imports an
exercise's reference (``course_utils.bank``), no visible source holds a prediction's answer, no
stored lesson output shows a fix the lesson did not earn first, and lesson 07's worked answers
open only after their card is answered (or their button is pressed)."""

from __future__ import annotations

import ast
import re

import nbformat
import pytest

from course_utils.author.authoring import BEGIN, END
from course_utils.learner import bugcard
from tests.conftest import ROOT

NOTEBOOKS = sorted(p for folder in ("notebooks", "exercises", "solutions")
                   for p in (ROOT / folder).glob("*.ipynb"))
LESSONS = sorted((ROOT / "notebooks").glob("*.ipynb"))
BANK = re.compile(r"\bcourse_utils\s*\.\s*bank\b")


def visible_code(source: str) -> str:
    """A cell's source without its SOLUTION blocks (what the exercise copy shows) and without
    IPython's ``%`` / ``!`` lines (not Python)."""
    kept, inside = [], False
    for line in source.splitlines():
        mark = line.strip()
        if mark == BEGIN:
            inside = True
        elif mark == END:
            inside = False
        elif not inside and not mark.startswith(("%", "!")):
            kept.append(line)
    return "\n".join(kept)


def bank_uses(source: str) -> list[str]:
    """Every way ``source`` reaches the exercise bank: an import of ``course_utils.bank`` (or of
    ``bank`` from ``course_utils``), or the dotted name anywhere in its text (a string given to
    ``importlib``, ``__import__``)."""
    code = visible_code(source)
    found = [m.group(0) for m in BANK.finditer(code)]
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return found
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "course_utils":
            found += [f"from course_utils import {a.name}" for a in node.names if a.name == "bank"]
    return found


def code_cells(path):
    return [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


@pytest.mark.parametrize("source", [
    "from course_utils.bank.lesson01.batch_bytes import batch_bytes",
    "import course_utils.bank.lesson01.batch_bytes as answers",
    "from course_utils import bank\nbank.get('01.batch_bytes').reference",
    "from course_utils import check, bank as b",
    "import importlib\nm = importlib.import_module('course_utils.bank.lesson05.strides')",
    "x = __import__('course_utils . bank', fromlist=['get'])",
    "%time 1\nfrom course_utils.bank import REGISTRY",
])
def test_the_scan_finds_every_way_to_import_the_bank(source):
    assert bank_uses(source)


@pytest.mark.parametrize("source", [
    "# the drill bank keeps the rest for lesson 08",
    "from course_utils.learner.checking import check",
    f"def f():\n    {BEGIN}\n    from course_utils.bank import x\n    {END}",
])
def test_the_scan_passes_code_that_does_not_import_the_bank(source):
    assert not bank_uses(source)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_notebook_imports_a_reference_answer(path):
    found = [(i, use) for i, c in enumerate(code_cells(path)) for use in bank_uses(c.source)]
    assert not found, f"{path.name}: code cells reach the exercise bank: {found}"


def predict_calls(path) -> list[ast.Call]:
    calls = []
    for cell in code_cells(path):
        try:
            tree = ast.parse(visible_code(cell.source))
        except SyntaxError:
            continue
        calls += [n for n in ast.walk(tree) if isinstance(n, ast.Call)
                  and getattr(n.func, "id", getattr(n.func, "attr", None)) in ("predict", "Predict")]
    return calls


def test_a_prediction_cell_names_only_its_id_and_every_id_is_in_the_bank():
    from course_utils.bank.predictions import REGISTRY

    used = []
    for path in LESSONS:
        for call in predict_calls(path):
            shown = ast.unparse(call)
            assert len(call.args) == 1 and not call.keywords, f"{path.name}: {shown} shows more " \
                "than the prompt's id (its answer key belongs in course_utils/bank/predictions.py)"
            assert isinstance(call.args[0], ast.Constant), shown
            used.append(call.args[0].value)
    assert used and all(key in REGISTRY for key in used), used
    assert sorted(used) == sorted(REGISTRY.ids()), "a prediction in the bank that no lesson asks"


def _earned(cells, index) -> bool:
    """A lesson may show a fix it answered itself in an earlier cell (lesson 08's demo round answers
    with ``demo.answer(...)`` or the demo's ``method_answer(demo)`` / ``guess_answer(demo)``)."""
    answered = re.compile(r"\.answer\(|\b\w+_answer\(demo\)")
    return ".reveal(" in cells[index].source and any(answered.search(c.source) for c in cells[:index])


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_no_stored_lesson_output_shows_a_fix_or_a_worked_answer_before_the_learner_acts(path):
    from course_utils.drills import taught

    titles = [f"{d.id} · {d.title}" for d in taught()]
    cells = code_cells(path)
    for i, cell in enumerate(cells):
        text = "\n".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
                         + str(o.get("data", {}).get("text/html", "")) for o in cell.outputs)
        if _earned(cells, i):
            continue
        assert "+++ fixed" not in text, f"{path.name} cell {i} shows a fix diff: {cell.source!r}"
        shown = [t for t in titles if t in text]
        assert not shown, f"{path.name} cell {i} names a worked drill: {shown}"


@pytest.fixture
def fresh_kernel(monkeypatch, progress_home):
    """No card answered yet in this process."""
    monkeypatch.setattr(bugcard, "_ANSWERED", set())
    monkeypatch.setattr(bugcard, "_ON_ANSWER", {})


def _answer(number: int) -> None:
    card = bugcard.card(number)
    card.answer(0, "line 3 looks wrong; I would measure the loss per step")


def test_a_worked_answer_shows_only_a_note_until_its_card_is_answered(fresh_kernel):
    from course_utils.learner.worked import worked

    example = worked(2, run=False)
    drill = example.drill
    data = example._repr_mimebundle_()
    assert "text/html" not in data and "card 2" in data["text/plain"]
    for secret in (drill.id, drill.title, "+++ fixed"):
        assert secret not in data["text/plain"] and secret not in repr(example)
    _answer(1)  # another card does not open it
    assert "text/html" not in worked(2, run=False)._repr_mimebundle_()
    _answer(2)
    opened = worked(2, run=False)._repr_mimebundle_()
    assert drill.title in opened["text/plain"] and "+++ fixed" in opened["text/plain"]
    assert "<pre" in opened["text/html"] and drill.title in repr(worked(2, run=False))


def test_submitting_the_card_opens_the_worked_answer_already_displayed(fresh_kernel):
    from course_utils.learner.worked import worked

    example = worked(1, run=False)
    example.widget()
    note, press, answer = example.controls
    assert answer.value == "" and press.layout.display != "none"
    _answer(1)
    assert example.drill.title in answer.value and "+++" in answer.value
    assert press.layout.display == "none" and note.layout.display == "none"


def test_the_button_opens_the_worked_answer_without_an_answer(fresh_kernel):
    from course_utils.learner.worked import SHOW, worked

    example = worked(3, run=False)
    example.widget()
    _, press, answer = example.controls
    assert press.description == SHOW and answer.value == ""
    press.click()
    assert example.drill.title in answer.value


def test_the_table_of_fixes_waits_for_every_card(fresh_kernel):
    from course_utils.drills import taught
    from course_utils.learner.worked import taught_table

    for number in range(1, len(taught())):
        _answer(number)
        assert "fix:" not in repr(taught_table())
    _answer(len(taught()))
    assert repr(taught_table()).count("fix:") == len(taught())


def test_every_prediction_is_followed_by_its_experiment_held_until_the_lock_in():
    for path in LESSONS:
        cells = code_cells(path)
        for i, cell in enumerate(cells):
            for call in predict_calls_in(cell.source):
                key = call.args[0].value
                after = cells[i + 1].source if i + 1 < len(cells) else ""
                assert f'after_predicting("{key}")' in after, \
                    f"{path.name}: the cell after predict({key!r}) shows its result unheld"


def predict_calls_in(source: str) -> list[ast.Call]:
    tree = ast.parse(visible_code(source))
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)
            and getattr(n.func, "id", None) == "predict"]


@pytest.fixture
def nothing_locked(monkeypatch, progress_home):
    from course_utils.learner import reveal

    monkeypatch.setattr(reveal, "_LOCKED", set())
    monkeypatch.setattr(reveal, "_ON_LOCK", {})


def _held(monkeypatch, block):
    """Run ``block`` under ``after_predicting("05.view_of_T")``; what it displayed."""
    from course_utils.learner import reveal

    shown = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    with reveal.after_predicting("05.view_of_T"):
        block()
    return shown


def test_a_result_is_held_until_its_prediction_is_locked_in_then_opens(nothing_locked, monkeypatch,
                                                                       capsys):
    import torch

    from course_utils.learner.reveal import SHOW, Held, predict

    t = torch.arange(12.).reshape(3, 4)
    shown = _held(monkeypatch, lambda: print("before the error") or t.T.view(-1))
    assert capsys.readouterr().out == ""  # nothing printed past the hold
    held, = shown
    assert isinstance(held, Held) and "before the error" in held.text
    assert held.text.splitlines()[-1].startswith("RuntimeError: view size is not compatible")
    assert held._repr_mimebundle_()["text/plain"] == held.text.rstrip("\n")
    held.widget()
    note, press, result = held.controls
    assert press.description == SHOW and result.value == ""
    prompt = predict("05.view_of_T").widget()
    prompt.children[1].index = 1
    prompt.children[2].children[0].click()  # Lock in
    assert "RuntimeError" in result.value and press.layout.display == "none"
    assert _held(monkeypatch, lambda: print("now")) == []  # locked: printed as it runs
    assert capsys.readouterr().out == "now\n"


def test_the_show_button_opens_a_held_result_without_a_prediction(nothing_locked, monkeypatch):
    held, = _held(monkeypatch, lambda: print("42"))
    held.widget()
    _, press, result = held.controls
    press.click()
    assert "42" in result.value


def test_an_opened_worked_answer_measures_the_drill_both_ways(fresh_kernel):
    from course_utils.learner.worked import worked

    text = worked(1).text()  # asked for from code, on purpose
    assert "\nbuggy:" in text and "\nfixed:" in text and "+++ fixed" in text
