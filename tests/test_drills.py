"""Is every drill well made: its buggy code shows the bug when run, its fix does not, and the
distributed drill ends within its bound?"""

import copy
import dataclasses
import json
import pickle
import re
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from course_utils import bank, drills
from course_utils.core import progress
from course_utils.drills import distributed
from course_utils.labs.case_inputs import LinearKeepingGrad
from tests.conftest import ROOT

ALL = drills.all_drills()
LOCAL = [d for d in ALL if d.runner is not distributed._gloo_run]  # the gloo drill: its own tests
ISSUE_BUGS = (  # one drill per bug the issue lists, by id
    "gradients.missing_zero_grad", "losses.double_softmax", "modes.dropout_at_eval",
    "modes.batchnorm_at_eval", "losses.softmax_wrong_dim", "losses.mask_broadcast",
    "gradients.inplace_breaks_autograd", "data.no_shuffle", "data.test_statistics_leak",
    "data.wrong_normalisation_constants", "devices.device_mismatch",
    "memory.training_vs_inference", "memory.checkpoint_no_grad_input", "numerics.lr_too_high",
    "numerics.log_of_zero", "numerics.zero_norm_division", "numerics.exploding_gradients",
    "numerics.anomaly_detection", "numerics.fp16_without_grad_scaler",
    "distributed.rank_skips_batch", "attention.mask_after_softmax",
    "performance.data_loading_bottleneck", "performance.compile_graph_break",
    "gradients.accumulation_step_mod_4", "seed.retry_yields_twice",
    "seed.layernorm_cpu_round_trip",
)


def test_the_bank_holds_at_least_24_drills_covering_every_bug_the_issue_lists():
    assert len(ALL) >= 24
    assert set(ISSUE_BUGS) <= set(drills.ids())


@pytest.mark.parametrize("drill", ALL, ids=lambda d: d.id)
def test_every_drill_is_declared_completely(drill):
    assert re.fullmatch(r"[a-z]+\.[a-z0-9_]+", drill.id)
    assert drill.category in drills.CATEGORIES and drill.title
    assert drill.buggy_code != drill.fixed_code
    compile(drill.buggy_code, drill.id, "exec")
    compile(drill.fixed_code, drill.id, "exec")
    q = drill.question
    assert q.prompt and len(q.choices) >= 3 and 0 <= q.answer < len(q.choices)
    assert len(drill.hints) >= 2 and drill.explanation and drill.source
    assert drill.source in drill.why
    if drill.exercise is not None:
        assert bank.get(drill.exercise).lesson == "07"


@pytest.mark.parametrize("drill", ALL, ids=lambda d: d.id)
def test_the_buggy_code_carries_no_comment_that_could_name_the_bug(drill):
    import io
    import tokenize

    tokens = tokenize.generate_tokens(io.StringIO(drill.buggy_code).readline)
    assert [t.string for t in tokens if t.type == tokenize.COMMENT] == []


def test_comments_are_cut_but_code_and_hashes_in_strings_stay():
    from course_utils.drills.core import without_comments

    source = ("import torch\n\n# the file is sorted\nx = '#not a comment'  # shuffle defaults to False\n"
              "    # indented note\ny = x  # (instrumentation)\n")
    assert without_comments(source) == "import torch\n\nx = '#not a comment'\ny = x\n"


def test_every_lesson_07_exercise_is_linked_from_a_drill():
    linked = {d.exercise for d in ALL if d.exercise}
    assert {ex.id for ex in bank.for_lesson("07")} <= linked
    assert len(linked) >= 8


def test_get_finds_every_drill_and_suggests_close_ids_for_a_typo():
    assert all(drills.get(d.id) is d for d in ALL)
    with pytest.raises(KeyError, match="Did you mean losses.double_softmax"):
        drills.get("losses.double_softmx")


def test_by_category_groups_every_drill_once_in_lesson_order():
    groups = drills.by_category()
    assert list(groups) == list(drills.CATEGORIES)
    assert [d for g in groups.values() for d in g] == ALL
    assert all(d.category == c for c, g in groups.items() for d in g)


def test_answer_positions_vary_between_drills_and_are_stable_between_runs():
    assert len({d.question.answer for d in ALL}) >= 3
    again = subprocess.run(
        [sys.executable, "-c", "from course_utils import drills; "
         "print([(d.question.answer, d.question.choices[0]) for d in drills.all_drills()])"],
        capture_output=True, text=True, cwd=ROOT, check=True)
    assert again.stdout.strip() == str([(d.question.answer, d.question.choices[0]) for d in ALL])


def test_the_right_answer_is_rarely_given_away_by_being_the_longest_choice():
    def longest(q):
        return max(range(len(q.choices)), key=lambda i: len(q.choices[i]))

    assert sum(longest(d.question) == d.question.answer for d in ALL) <= len(ALL) // 3


def test_importing_the_drills_package_loads_no_plots_widgets_compiler_or_workers():
    code = ("import sys, course_utils.drills, course_utils.learner.bugcard; "
            "print([m for m in ('matplotlib', 'ipywidgets', 'torch._dynamo', "
            "'course_utils.drills.dist_worker', 'course_utils.drills.gradients') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("drill", LOCAL, ids=lambda d: d.id)
def test_the_buggy_code_shows_its_symptom_and_the_fix_passes_the_same_check(drill):
    bug, fix = drill.symptom(), drill.fix_check()
    assert bug.buggy, f"{drill.id}: the buggy code did not show the bug: {bug}"
    assert not fix.buggy, f"{drill.id}: the fixed code still shows the bug: {fix}"
    assert bug.summary and fix.summary and bug.summary != fix.summary


FORMS = [(d, k) for d in LOCAL for k in range(1, d.forms)]


def test_every_drill_has_at_least_three_variants_each_with_other_code():
    few = [d.id for d in ALL if len(d.variants) < 3]
    assert few == [], f"drills with fewer than 3 variants: {few}"
    for drill in ALL:
        codes = {drill.variant(k).buggy_code for k in range(drill.forms)}
        assert len(codes) == drill.forms, f"{drill.id}: two forms show the same code"


@pytest.mark.parametrize(("drill", "k"), FORMS, ids=lambda x: x.id if hasattr(x, "id") else f"v{x}")
def test_every_variant_shows_its_symptom_and_its_fix_removes_it(drill, k):
    form = drill.variant(k)
    assert form.id == drill.id and form.variant_index == k
    bug, fix = form.symptom(), form.fix_check()
    assert bug.buggy, f"{drill.id} variant {k}: the buggy code did not show the bug: {bug}"
    assert not fix.buggy, f"{drill.id} variant {k}: the fix still shows the bug: {fix}"


def test_a_variant_renames_whole_names_only_and_its_measure_reads_the_old_names():
    from course_utils.drills.core import Variant, rename

    assert rename("x = model(x)\nmodel.x = x_1\n", {"x": "h", "model": "net"}) == \
        "h = net(h)\nnet.x = x_1\n"
    base = drills.get("attention.mask_after_softmax")
    form = dataclasses.replace(base, variants=(Variant("t", {"weights": "attn"}, (("D = 2, 5, 8",
                                                                                    "D = 2, 5, 4"),)),))
    shown = form.variant(1)
    assert "attn = F.softmax" in shown.buggy_code and "weights" not in shown.buggy_code
    assert shown.symptom().buggy and not shown.fix_check().buggy
    with pytest.raises(ValueError, match="matches no code"):
        dataclasses.replace(base, variants=(Variant("t", edits=(("no such", "x"),)),)).variant(1)
    with pytest.raises(ValueError, match=f"forms 0-{base.forms - 1}"):
        base.variant(base.forms)


def test_the_timed_pool_leaves_out_every_drill_lesson_07_shows():
    from course_utils.learner.drilling.scoring import pick

    taught = set(drills.TAUGHT.values())
    assert {drills.get(i).category for i in taught} == set(drills.CATEGORIES)
    pool = drills.timed_pool()
    assert not taught & {d.id for d in pool} and len(pool) >= len(ALL) - len(drills.shown_solved())
    served = [d for seed in range(20) for d in pick(seed, count=5)]
    assert not taught & {d.id for d in served}
    assert len({d.variant_index for d in served}) > 1  # rounds serve variants, not one surface


def _lesson_07_text() -> tuple[str, str]:
    """Lesson 07's stored outputs (text of every mime type) and its cells' sources."""
    cells = json.loads((ROOT / "notebooks" / "07_training_bugs.ipynb").read_text())["cells"]
    outputs = []
    for cell in cells:
        for out in cell.get("outputs", []):
            outputs.append("".join(out.get("text", "")))
            outputs += ["".join(v) for v in out.get("data", {}).values() if isinstance(v, (str, list))]
    return "\n".join(outputs), "\n".join("".join(c["source"]) for c in cells)


def test_no_drill_of_the_timed_pool_appears_in_lesson_07():
    """Neither the id, the title nor any distinctive line of a pool drill's code (any form) is in
    lesson 07's stored outputs or sources; every taught drill's code is in its outputs."""
    outputs, sources = _lesson_07_text()
    taught_lines = {ln.strip() for d in drills.taught() for ln in d.buggy_code.splitlines()}
    for drill in drills.timed_pool():
        assert drill.id not in outputs + sources and drill.title not in outputs, drill.id
        for k in range(drill.forms):
            lines = {ln.strip() for ln in drill.variant(k).buggy_code.splitlines()}
            shown = [ln for ln in lines - taught_lines if len(ln) >= 30 and ln in outputs]
            assert not shown, f"{drill.id} form {k}: lesson 07 shows {shown}"
    for drill in drills.taught():
        assert drill.buggy_code.strip().splitlines()[-1].strip() in outputs, drill.id


GIVEAWAYS = {"bug", "buggy", "wrong", "missing", "forgot", "forgotten", "oops", "fixme", "todo",
             "broken", "incorrect", "mistake", "leak", "leaky", "unshifted", "inverted", "instead",
             "should", "careful", "beware", "silently", "accidentally"}


def _chosen_words(source: str) -> set[str]:
    """The words of what the code's author chose: names it binds (variables, functions, classes,
    arguments, attributes it sets) and its string literals; not the library calls it makes."""
    import ast

    chosen = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            chosen.append(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            chosen.append(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            chosen.append(node.name)
        elif isinstance(node, ast.arg):
            chosen.append(node.arg)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            chosen.append(node.value)
    return {w.lower() for text in chosen for w in re.findall(r"[A-Za-z]+", text)}


@pytest.mark.parametrize("drill", ALL, ids=lambda d: d.id)
def test_no_word_in_the_buggy_code_gives_the_bug_away(drill):
    """No name or string the buggy code chose (in any form) is a word that names a bug, or a word
    of the drill's title or explanation that its fixed code does without."""
    story = {w.lower() for w in re.findall(r"[A-Za-z]{5,}", f"{drill.title} {drill.explanation}")}
    story -= {"forward", "super", "torch", "model", "batch"}  # words any model code uses
    for k in range(drill.forms):
        form = drill.variant(k)
        words = _chosen_words(form.buggy_code)
        told = (words & GIVEAWAYS) | ((words & story) - _chosen_words(form.fixed_code))
        assert not told, f"{drill.id} form {k}: the buggy code says {sorted(told)}"


def test_a_drill_reports_code_symptom_and_fix_in_text():
    text = drills.get("losses.softmax_wrong_dim").report()
    assert "│ probs = F.softmax(logits, dim=0)" in text
    assert "symptom:" in text and "fixed:" in text and "1 everywhere" in text


def test_a_symptom_with_a_plot_draws_a_figure():
    import matplotlib.pyplot as plt

    fig = drills.get("numerics.lr_too_high").symptom().figure()
    assert fig is not None and fig.axes[0].lines
    plt.close(fig)
    assert drills.get("data.no_shuffle").symptom().figure() is None


def test_code_runs_in_a_fresh_namespace_and_keeps_errors_and_warnings():
    run = drills.run_code("import warnings\nwarnings.warn('careful')\nx = 1\n1 / 0\n", "t")
    assert run["x"] == 1 and isinstance(run.error, ZeroDivisionError)
    assert run.warnings == ("careful",) and run.error_text.startswith("ZeroDivisionError")
    assert "x" not in drills.run_code("y = 2\n", "t").namespace


def test_record_answer_adds_the_drills_key_and_keeps_the_rest_of_progress():
    progress.record_attempt("01.batch_bytes", passed=True)
    drills.record_answer("losses.double_softmax", False, "too high lr")
    entry = drills.record_answer("losses.double_softmax", True, "  softmax twice  ")
    data = progress.load()
    assert data["exercises"]["01.batch_bytes"]["passed"] is True
    assert data[drills.PROGRESS_KEY]["losses.double_softmax"] == entry
    assert entry["attempts"] == 2 and entry["right"] == 1 and entry["last"] == "right"
    assert entry["hypothesis"] == "softmax twice" and "first_right" in entry
    assert json.loads(progress.path().read_text())["drills"] == drills.answers()


needs_gloo = pytest.mark.skipif(not distributed.gloo_available(), reason="no gloo backend")


@pytest.mark.slow
@needs_gloo
def test_the_distributed_drill_hangs_then_is_diagnosed_and_fixed_within_its_bound():
    result = distributed.investigate(timeout_s=1.5, bound_s=40)
    assert not result.killed  # every worker ended by itself, before the hard bound
    text = distributed.stable_report(result)
    bug, monitored, detail, fix = (result.phases[p] for p in
                                   ("bug", "monitored_barrier", "DETAIL", "fix"))
    assert [distributed.classify(r["error"]) for r in bug] == ["timed out", "timed out"]
    assert bug[0]["values"]["sums"] == [0.0, 2.0, 5.0]  # step 3 paired with step 2
    assert distributed.classify(monitored[0]["error"]).endswith("rank(s) 1 never arrived")
    assert "runs BARRIER" in distributed.classify(detail[0]["error"])
    assert "runs ALLREDUCE" in distributed.classify(detail[1]["error"])
    assert all(r["error"] is None and r["values"]["sums"] == [0.0, 2.0, 2.0, 6.0] for r in fix)
    assert "within the 40 s bound: True" in text


@pytest.mark.slow
@needs_gloo
def test_the_distributed_drill_symptom_and_fix_through_the_drill_api():
    drill = drills.get("distributed.rank_skips_batch")
    bug, fix = drill.symptom(), drill.fix_check()
    assert bug.buggy and "timed out" in bug.summary and "30 minutes" in bug.summary
    assert not fix.buggy and fix.summary.count("finished") == 2


@pytest.mark.slow
@needs_gloo
def test_every_variant_of_the_distributed_drill_hangs_and_its_fix_finishes():
    """All variants in one launch (a phase each for the buggy and the fixed code), each phase
    read by the drill's own measure."""
    base = drills.get("distributed.rank_skips_batch")
    forms = [base.variant(k) for k in range(1, base.forms)]
    phases = [(f"{k}.{kind}", code, "OFF") for k, form in enumerate(forms, 1)
              for kind, code in (("bug", form.buggy_code), ("fix", form.fixed_code))]
    result = distributed.launch(phases, timeout_s=1.5, bound_s=60)
    assert len(forms) >= 3 and not result.killed
    for k in range(1, len(forms) + 1):
        bug, fix = (base.measure(drills.CodeRun({"launch": dataclasses.replace(
            result, phases={"run": result.phases[f"{k}.{kind}"]})})) for kind in ("bug", "fix"))
        assert bug.buggy and "timed out" in bug.summary, (k, bug.summary)
        assert not fix.buggy and fix.summary.count("finished") == 2, (k, fix.summary)


@pytest.mark.slow
@needs_gloo
def test_a_worker_that_never_returns_is_killed_at_the_hard_bound():
    result = distributed.launch([("sleeps", "import time\ntime.sleep(120)\n", "OFF")],
                                timeout_s=1.0, bound_s=8)
    assert result.killed  # still running at the bound (a worker that ended by itself is not)
    assert "within the 8 s bound: False" in distributed.stable_report(result)


@pytest.mark.parametrize("trip", [copy.deepcopy, lambda obj: pickle.loads(pickle.dumps(obj))],
                         ids=["deep copy", "pickle"])
def test_a_linear_keeping_grad_keeps_its_stale_gradient_through_copies_and_pickles(trip):
    torch.manual_seed(0)
    model = LinearKeepingGrad(3, 2)
    F.mse_loss(model(torch.randn(4, 3)), torch.randn(4, 2)).backward()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    copied, copied_optimizer = trip((model, optimizer))
    for p, q in zip(model.parameters(), copied.parameters(), strict=True):
        assert torch.equal(p, q) and torch.equal(p.grad, q.grad) and q.grad is not p.grad
    assert copied_optimizer.param_groups[0]["params"][0] is copied.weight  # still the copy's own
    assert trip(LinearKeepingGrad(2, 2)).weight.grad is None


def test_a_fix_that_changes_nothing_is_refused_when_the_drill_is_declared():
    """FIXED = BUGGY.replace(old, new) with an ``old`` that matches nothing (it spans a comment, say)
    would leave the fix equal to the bug: the declaration says so at once."""
    import dataclasses

    drill = ALL[0]
    with pytest.raises(ValueError, match="the fixed code is the buggy code"):
        dataclasses.replace(drill, fixed_code=drill.buggy_code + "\n# a comment only\n")
