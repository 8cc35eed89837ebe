"""Lesson 08's capstone, graded: the four checkpoints a script's report must pass, and ``fixed``,
the haunted script repaired (the reference solution of the capstone exercises in
``course_utils.bank.lesson08``).

``checkpoints(report, lab)`` is every checkpoint's verdict on a script's run in ``lab`` (None where it
passes, else what is wrong); ``scorecard`` prints them as ✔/✘ lines. The evidence is what the lab
measured (``lab.measured_runs()``, its last run), never the report the script returned: that report
must be the measured one, and a made-up or edited dict is refused. Every checkpoint first checks the
task's rules (``check_rules``: the model and its symmetric start, Adam with ``lab.lr``, token vectors
within norm 1, training rows from ``lab.dataset()`` only, batches and step budget, every loss logged,
no shared storage between parameters); the frozen checkpoint also wants no lost in-place write. The
lab, the haunted script and the report they judge are in ``capstone``, which re-exports every name
of this module.
"""

from __future__ import annotations

import json
from typing import Any

import torch
import torch.nn.functional as F

from course_utils.labs.capstone_data import TagModel
from course_utils.labs.capstone_rules import NORM_LIMIT

__all__ = ["CHECKPOINTS", "CHECKS", "LOSS_LIMIT", "SYNCS_PER_STEP", "check_fallback", "check_frozen",
           "check_loss", "check_rules", "check_syncs", "checkpoints", "clip_rows_", "evidence", "fixed",
           "scorecard"]

LOSS_LIMIT = 0.45  # held-out cross-entropy the fixed script reaches within the lab's steps
SYNCS_PER_STEP = 0.25  # at most one host read every four steps, on average
CHECKPOINTS = ("loss", "frozen", "fallback", "syncs")

# --- the fixed script --------------------------------------------------------------------------------


@torch.no_grad()
def clip_rows_(table: torch.Tensor, max_norm: float = 1.0) -> None:
    """What ``nn.Embedding(max_norm=...)`` does to the rows it looks up, done to every row with ops
    that have MPS kernels: scale rows longer than ``max_norm`` back to it (PyTorch's own formula)."""
    table.mul_((max_norm / (table.norm(dim=1, keepdim=True) + 1e-7)).clamp(max=1.0))


def fixed(lab) -> dict:
    """The same script with its five bugs fixed (the capstone's reference solution)."""

    torch.manual_seed(lab.seed)
    ids, labels = lab.dataset()
    model = TagModel()  # no max_norm in the forward: embedding_renorm_ has no MPS kernel (R48)
    model.up.weight.data = model.down.weight.T.contiguous()  # same values, row-major layout
    clip_rows_(model.embed.weight)  # max_norm=1.0, kept with device ops outside the forward
    optimizer = torch.optim.Adam(model.parameters(), lr=lab.lr)
    order = torch.Generator().manual_seed(lab.seed)
    with lab.run(model, optimizer) as run:
        for step in range(lab.steps):
            start = step * lab.batch % len(ids)
            if start == 0:
                perm = torch.randperm(len(ids), generator=order)  # a fresh shuffle every epoch
            pick = perm[start:start + lab.batch]
            optimizer.zero_grad()
            loss = F.cross_entropy(model(ids[pick]), labels[pick])
            loss.backward()
            optimizer.step()
            clip_rows_(model.embed.weight)
            run.log(loss.detach())  # read in groups by the logger, not once per step
    return run.report()


# --- the checkpoints ---------------------------------------------------------------------------------


def _as_report(report: Any) -> dict | str:
    if not isinstance(report, dict):
        return f"return run.report() (a dict), not {type(report).__name__}"
    missing = {"steps", "eval_loss", "frozen", "forwards", "syncs"} - set(report)
    return f"the report lacks {sorted(missing)}: return run.report()" if missing else report


def _same(a: dict, b: dict) -> bool:
    """Equal as plain data (NaN equal to NaN, as the report writes a non-finite loss)."""
    try:
        return json.dumps(a, sort_keys=True, default=repr) == json.dumps(b, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        return False


def evidence(report: Any, lab) -> dict | str:
    """What the lab measured for the script's run (its last run in ``lab``), or what is wrong: the
    returned report is never the evidence, it must only be the one ``run.report()`` gave."""
    r = _as_report(report)
    if isinstance(r, str):
        return r
    runs = lab.measured_runs()
    if not runs:
        return ("the lab measured no run: train inside `with lab.run(model, optimizer) as run:` of the "
                "lab you were given and return run.report()")
    measured = runs[-1]
    if not _same(r, measured):
        return ("the report you returned is not the one lab.run(...) measured for your last run: "
                "return run.report() as it is")
    return measured


def check_rules(r: dict, lab) -> str | None:
    """The task's rules, on what the lab measured (``r``): None, or the first rule broken."""
    rules = r.get("rules") or {}
    if not rules.get("tag_model"):
        return "the model is not a TagModel: keep the model, TagModel() (rule 2)"
    if rules.get("shared_storage"):
        pairs = ", ".join(" and ".join(p) for p in rules["shared_storage"])
        return (f"parameters share storage ({pairs}): start up as a copy of down's transpose, "
                "do not tie them (rule 2)")
    if not rules.get("symmetric_start"):
        return "up.weight did not start as the transpose of down.weight: keep the symmetric start (rule 2)"
    if rules.get("optimizer") != "Adam" or any(lr != lab.lr for lr in rules.get("lr", [])):
        return (f"the optimizer is {rules.get('optimizer')} with lr {rules.get('lr')}: keep Adam with "
                f"lr=lab.lr={lab.lr} (rule 2)")
    if rules.get("trained_before") or not rules.get("optimizer_fresh", True):
        return "the model or its optimizer trained before this lab.run(...): train inside one run (rule 1)"
    if not 0 < r["steps"] <= lab.steps:
        return f"trained {r['steps']} optimizer steps; the budget is 1 to {lab.steps} (rule 1)"
    if not rules.get("got_gradients"):
        return "no parameter received a gradient in lab.run(...): nothing trained (rule 1)"
    if rules.get("foreign_rows"):
        return (f"{rules['foreign_rows']} of the {rules['rows_seen']} rows the model trained on are not rows "
                "of lab.dataset() (held-out data, or made up): train on lab.dataset() only (rule 1)")
    low, high = rules.get("batch_rows", [0, 0])
    if not 1 <= low <= high <= lab.batch:
        return f"forwards took {low} to {high} rows; a batch has 1 to lab.batch={lab.batch} rows (rule 1)"
    if len(r.get("logged", [])) != r["steps"]:
        return (f"{len(r.get('logged', []))} losses logged for {r['steps']} steps: log each step's loss "
                "once with run.log(...) (rule 1)")
    if not rules.get("max_token_norm", 0.0) <= NORM_LIMIT:  # NaN fails too
        return (f"a forward used token vectors of norm up to {rules.get('max_token_norm'):.4g}: keep "
                "every token vector within norm 1 (rule 2)")
    return None


def _evidence_and_rules(report: Any, lab) -> dict | str:
    r = evidence(report, lab)
    if isinstance(r, str):
        return r
    return check_rules(r, lab) or r


def check_loss(report: Any, lab) -> str | None:
    """Checkpoint 1: held-out loss at most LOSS_LIMIT within the lab's steps, on the affected Mac."""
    r = _evidence_and_rules(report, lab)
    if isinstance(r, str):
        return r
    loss = r["eval_loss"]
    if not loss <= LOSS_LIMIT:  # NaN fails too
        return (f"held-out loss {loss:.3g} (accuracy {r.get('eval_accuracy', float('nan')):.0%}) after "
                f"{r['steps']} steps on the {r.get('machine', 'lab machine')}; it must be at most "
                f"{LOSS_LIMIT}")
    return None


def check_frozen(report: Any, lab) -> str | None:
    """Checkpoint 2: no parameter that receives gradients stays bit-identical, every parameter the
    reference trains is trained (none frozen by requires_grad, left out of the optimizer, stepped
    with lr 0 or with its gradient cleared), and no in-place write is lost (affected Mac, emulated)."""
    r = _evidence_and_rules(report, lab)
    if isinstance(r, str):
        return r
    if r["frozen"]:
        return (f"frozen on the {r.get('machine', 'lab machine')}: {', '.join(r['frozen'])} "
                f"received gradients for {r['steps']} steps and never changed")
    untrained = r.get("untrained") or {}
    if untrained:
        names = "; ".join(f"{name}: {why}" for name, why in untrained.items())
        return (f"left untrained (the reference trains every parameter): {names}. Fix the bug, "
                "not the training")
    lost = r["rules"].get("lost_writes", 0)
    if lost:
        return (f"{lost} in-place writes into non-contiguous tensors were lost on the "
                f"{r.get('machine', 'lab machine')}: some updates never landed")
    return None


def check_fallback(report: Any, lab) -> str | None:
    """Checkpoint 3: the forward stays on the device: no op falls back, no tensor goes to the host."""
    r = _evidence_and_rules(report, lab)
    if isinstance(r, str):
        return r
    if r["forwards"] < 1:
        return "the model's forward never ran inside lab.run(...)"
    falls = r.get("forward_fallbacks") or {}
    if falls:
        ops = ", ".join(f"{op} ({n}x)" for op, n in falls.items())
        return f"ops fell back to the CPU inside the forward (emulated): {ops} in {r['forwards']} forwards"
    if r.get("forward_copies", 0):
        return (f"{r['forward_copies']} copies between the host and the device inside the forward "
                f"({r['forwards']} forwards): a round trip to the CPU is a fallback by hand")
    return None


def check_syncs(report: Any, lab) -> str | None:
    """Checkpoint 4: at most SYNCS_PER_STEP host reads of device values per step, on average."""
    r = _evidence_and_rules(report, lab)
    if isinstance(r, str):
        return r
    per_step = r["syncs"] / r["steps"]
    if per_step > SYNCS_PER_STEP:
        places = "; ".join(r.get("sync_places", [])[:3])
        return (f"{r['syncs']} syncs in {r['steps']} steps ({per_step:.2f} per step, at most "
                f"{SYNCS_PER_STEP}): {places}")
    return None


CHECKS = {"loss": check_loss, "frozen": check_frozen, "fallback": check_fallback, "syncs": check_syncs}


def checkpoints(report: Any, lab) -> dict[str, str | None]:
    """Every checkpoint's verdict on a script's run in ``lab`` (``report`` is what the script
    returned): None where it passes, else what is wrong."""
    return {name: check(report, lab) for name, check in CHECKS.items()}


def scorecard(report: Any, lab) -> str:
    """The checkpoints as lines of text: ✔ or ✘, the name, and what is wrong."""
    lines = []
    for name, problem in checkpoints(report, lab).items():
        mark = "✔" if problem is None else "✘"
        lines.append(f"{mark} {name:<9}{problem or ''}".rstrip())
    return "\n".join(lines)
