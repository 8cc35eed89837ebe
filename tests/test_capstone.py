"""Does the capstone's haunted script fail every checkpoint, its fixed version pass them all, and
does each partial repair fail exactly the checkpoints of the bugs it leaves in?"""

import copy
import pickle

import pytest
import torch

from course_utils.bank.lesson08 import capstone_fallback, capstone_frozen, capstone_loss, capstone_syncs
from course_utils.grader import wire
from course_utils.labs import capstone
from course_utils.labs.capstone import CHECKPOINTS, Lab, checkpoints, fixed, haunted
from course_utils.learner.checking import find_failure
from course_utils.toolkit.emulate import mps_fallback as emulated
from course_utils.toolkit.syncs.finder import find_sync_points


def failing(report, lab) -> set[str]:
    return {name for name, problem in checkpoints(report, lab).items() if problem}


@pytest.mark.parametrize("seed", [0, 1])
def test_the_haunted_script_fails_every_checkpoint(seed):
    lab = Lab(seed=seed)
    assert failing(haunted(lab), lab) == set(CHECKPOINTS)


@pytest.mark.parametrize("seed", [0, 1, 4321])
def test_the_fixed_script_passes_every_checkpoint(seed):
    lab = Lab(seed=seed)
    report = fixed(lab)
    assert failing(report, lab) == set()
    assert report["eval_accuracy"] > 0.9 and report["steps"] == lab.steps


@pytest.mark.parametrize("exercise, mutant, fails", [
    (capstone_loss, "forgets optimizer.zero_grad()", {"loss"}),
    (capstone_loss, "batches the tag-sorted rows in order", {"loss"}),
    (capstone_loss, "shuffles the ids but not the tags", {"loss"}),
    (capstone_loss, "keeps the .T.clone() tie", {"loss", "frozen"}),
    (capstone_frozen, "a new nn.Parameter after the optimizer was built", {"loss", "frozen"}),
    (capstone_fallback, "keeps max_norm=1.0", {"fallback"}),
    (capstone_fallback, "renorms the table on the CPU inside the forward", {"fallback"}),
    (capstone_syncs, "still logs loss.item() every step", {"syncs"}),
    (capstone_syncs, "checks the loss for NaN every step", {"syncs"}),
], ids=lambda v: v if isinstance(v, str) else "")
def test_each_partial_repair_fails_only_the_checkpoints_of_the_bugs_it_leaves(exercise, mutant, fails):
    lab = Lab(seed=0)
    assert failing(exercise.EXERCISE.mutants[mutant](lab), lab) == fails


def test_the_haunted_report_names_each_symptom():
    lab = Lab(seed=0)
    report = haunted(lab)
    assert report["frozen"] == ["up.weight"]
    assert report["forward_fallbacks"] == {"aten::embedding_renorm_": lab.steps}
    assert report["syncs"] == lab.steps and "run.log(loss.item())" in report["sync_places"][0]
    assert report["grad_norms"][15] > 5 * report["grad_norms"][0]  # gradients pile up: no zero_grad()


def test_the_frozen_weight_is_frozen_only_on_the_affected_machine():
    assert haunted(Lab(affected=False))["frozen"] == []


def test_the_fixed_script_logs_every_loss_with_one_read_per_group():
    lab = Lab(steps=20, log_every=8)
    report = fixed(lab)
    assert len(report["logged"]) == 20 and report["syncs"] == 3  # after 8, 16, and the last 4


def test_find_sync_points_around_a_whole_script_sees_the_labs_tensors_as_device_tensors():
    found = find_sync_points(haunted, Lab(steps=6))
    assert [(g.kind, g.count, g.where.code) for g in found.groups()] == [
        ("item", 6, "run.log(loss.item())")]
    assert len(find_sync_points(fixed, Lab(steps=6))) == 1  # the logger's one read at the end


def test_the_sentinel_reports_the_frozen_weight(capsys):
    haunted(Lab(steps=12, sentinel=True))
    out = capsys.readouterr().out
    assert "FROZEN up.weight" in out and "NON-CONTIGUOUS up.weight" in out


def test_a_report_is_plain_data_that_crosses_the_graders_wire():
    report = fixed(Lab(steps=8))
    assert wire.decode(wire.encode(report)) == report


def test_a_lab_pickles_and_copies_without_the_data_it_handed_out():
    lab = Lab(seed=3)
    lab.dataset()
    assert lab._handed
    for clone in (pickle.loads(pickle.dumps(lab)), copy.deepcopy(lab)):
        assert clone == lab and clone._handed == []


def test_a_forward_that_raises_leaves_no_emulation_and_no_mode_behind():
    class Broken(capstone.TagModel):
        def forward(self, ids):
            raise RuntimeError("boom")

    def script(lab):
        model = Broken()
        with lab.run(model, torch.optim.Adam(model.parameters())):
            model(lab.dataset()[0][:4])

    with pytest.raises(RuntimeError, match="boom"):
        script(Lab())
    assert emulated.active() is None
    assert torch._C._len_torch_dispatch_stack() == 0


def test_the_report_is_only_ready_after_the_run():
    model = capstone.TagModel()
    run = Lab().run(model, torch.optim.Adam(model.parameters()))
    with pytest.raises(RuntimeError, match="after the"):
        run.report()


@pytest.mark.parametrize("value, words", [(None, "not NoneType"), ({"steps": 1}, "lacks")])
def test_every_checkpoint_explains_a_return_value_that_is_not_a_report(value, words):
    for problem in checkpoints(value, Lab()).values():
        assert words in problem


def test_the_scorecard_marks_each_checkpoint():
    lab = Lab(seed=0)
    card = capstone.scorecard(haunted(lab), lab).splitlines()
    assert [line[:1] for line in card] == ["✘"] * 4
    assert [line.split()[1] for line in card] == list(CHECKPOINTS)


# --- the evidence is what the lab measured, never the report a script returns -----------------

CHECKPOINT_EXERCISES = [capstone_loss, capstone_frozen, capstone_fallback, capstone_syncs]


def _claimed_success(lab):
    """A forged report: the fixed script's report, measured in another lab, claiming every check."""
    return fixed(Lab(**lab.settings()))


def _haunted_but_reports_success(lab):
    haunted(lab)  # the lab measures the haunted run...
    return fixed(Lab(**lab.settings()))  # ...and the script returns a report of a good one


def _edited_report(lab):
    report = haunted(lab)
    report.update(eval_loss=0.01, frozen=[], forward_fallbacks={}, syncs=0, syncs_per_step=0.0)
    return report


@pytest.mark.parametrize("forge, words", [
    (_claimed_success, "measured no run"),
    (_haunted_but_reports_success, "not the one lab.run(...) measured"),
    (_edited_report, "not the one lab.run(...) measured"),
], ids=["a report made elsewhere", "a good report after a bad run", "the run's report, edited"])
@pytest.mark.parametrize("exercise", CHECKPOINT_EXERCISES, ids=lambda m: m.EXERCISE.id)
def test_no_checkpoint_accepts_a_forged_report(exercise, forge, words):
    lab = Lab(seed=0)
    assert words in checkpoints(forge(lab), lab)[exercise.EXERCISE.id.removeprefix("08.capstone_")]
    failure = find_failure(exercise.EXERCISE, forge, 0)
    assert failure is not None and words in failure.problem


def test_each_lab_object_keeps_its_own_evidence():
    lab = Lab(seed=2)
    clone = copy.deepcopy(lab)
    report = fixed(clone)
    assert clone.measured_runs()[-1] == report and failing(report, clone) == set()
    assert lab.measured_runs() == [] and "measured no run" in checkpoints(report, lab)["loss"]
    assert pickle.loads(pickle.dumps(clone)).measured_runs() == []


# --- the rules the task states, measured by the lab -----------------------------------------------

def broken(*edits):
    from course_utils.bank.lesson08._shared import broken as fixed_with

    return fixed_with(*edits)


@pytest.mark.parametrize("script, words", [
    (broken(("ids, labels = lab.dataset()", "ids, labels = lab.eval_set()")), "not rows of lab.dataset()"),
    (broken(("clip_rows_(model.embed.weight)  #", "pass  #"),
            ("optimizer.step()\n            clip_rows_(model.embed.weight)", "optimizer.step()")),
     "within norm 1"),
    (broken(("model.up.weight.data = model.down.weight.T.contiguous()", "pass")), "symmetric start"),
    (broken(("model.up.weight.data = model.down.weight.T.contiguous()",
             "model.up.weight.data = model.down.weight.data.T")), "share storage"),
    (broken(("Adam(model.parameters(), lr=lab.lr)", "Adam(model.parameters())")), "keep Adam with lr=lab.lr"),
    (broken(("Adam(model.parameters(), lr=lab.lr)", "SGD(model.parameters(), lr=lab.lr)")), "keep Adam"),
    (broken(("perm[start:start + lab.batch]", "perm[start:start + 2 * lab.batch]")), "rows (rule 1)"),
    (broken(("run.log(loss.detach())", "pass")), "losses logged"),
    (broken(("loss.backward()", "pass")), "no parameter received a gradient"),
    (broken(("with lab.run(model, optimizer) as run:",
             "with lab.run(model, optimizer):\n        pass\n    with lab.run(model, optimizer) as run:")),
     "trained before"),
], ids=["trains on the held-out set", "no norm bound", "no symmetric start", "tied weights",
        "Adam's default lr", "SGD", "batches of 64", "logs nothing", "no backward", "two runs"])
def test_every_checkpoint_refuses_a_run_that_breaks_a_rule_of_the_task(script, words):
    lab = Lab(seed=0)
    verdicts = checkpoints(script(lab), lab)
    assert all(problem and words in problem for problem in verdicts.values()), verdicts


def test_the_frozen_checkpoint_counts_lost_writes_when_nothing_looks_frozen():
    script = broken(("weight.T.contiguous()", "weight.T.clone()"), (
        "optimizer.step()\n", "optimizer.step()\n            model.up.weight.data.mul_(0.999)\n"))
    lab = Lab(seed=0)
    report = script(lab)
    assert report["frozen"] == [] and report["rules"]["lost_writes"] > 0
    assert "in-place writes into non-contiguous tensors were lost" in checkpoints(report, lab)["frozen"]


def test_the_rules_of_the_haunted_and_the_fixed_script_hold():
    for script in (haunted, fixed):
        lab = Lab(seed=0)
        rules = script(lab)["rules"]
        assert rules["foreign_rows"] == 0 and rules["batch_rows"] == [32, 32] and rules["symmetric_start"]
        assert rules["max_token_norm"] <= 1.0 + 1e-4 and rules["shared_storage"] == []
    assert rules["lost_writes"] == 0


def test_freezing_the_affected_weight_fails_the_frozen_checkpoint_and_says_why():
    """The dodge `requires_grad_(False)` on up.weight (every other untrained-parameter fix is a hand
    mutant of 08.capstone_frozen, rejected by its judge in test_bank)."""
    lab = Lab(seed=0)
    report = capstone_frozen.UNTRAINED["fixes the layout but freezes up.weight"](lab)
    assert report["untrained"] == {"up.weight": "never received a gradient (requires_grad off, "
                                                "detached, or cleared)"}
    assert "left untrained" in checkpoints(report, lab)["frozen"]
    assert fixed(Lab(seed=1))["untrained"] == {}
