"""Fix-it mode: a drill answered by editing its buggy code, judged by behaviour.

``judge_edit(drill, code)`` runs the learner's edited code through the drill's own runner and
measurement, and beside it the drill's fixed code (the reference). The edit passes when

1. it runs without an error (an error hidden by ``try``/``except`` leaves the work undone: see 3);
2. the drill's measurement no longer shows the symptom;
3. it still does the job the fixed code does: every parameter the reference trains moves, and
   every parameter the reference gives a gradient gets one (deleting the loop or the backward,
   a constant loss, ``detach()``, ``requires_grad_(False)``, an early return, ``torch.no_grad()``
   around the step all leave one untouched); where the reference trains nothing (a computation),
   every result the buggy code computes and the fixed code keeps is there, with the fixed code's
   shapes and values (a constant, an empty list fail), but for the drill's ``intermediates``;
4. the drill's own ``job`` check, where it has one, holds (a loss that really falls, say).

Parameters are told apart by their names inside the top-level modules of the namespace; their
values before training are taken the first time a module runs forward. Every run starts from
one random state (``START_SEED``), the reference's and the edit's alike. The grader runs this in a
fresh, limited process (``course_utils.grader.drill_fix``); here it runs in-process.
"""

from __future__ import annotations

import ast
import contextlib
from dataclasses import dataclass, field

import torch
from torch import nn

from course_utils.drills.core import CodeRun, Drill, Symptom

RTOL, ATOL = 1e-3, 1e-5  # a computation's outputs: the reference's, within float32 noise
START_SEED = 20_240_917  # torch's random state at the start of every run (no drill seeds with it)


@dataclass(frozen=True)
class FixVerdict:
    """The verdict on one edit: passed, the measured symptom (when it ran), what is wrong."""

    passed: bool
    symptom: str = ""
    problems: tuple[str, ...] = ()
    trained: tuple[str, ...] = field(default=())  # the parameters the edit trained

    def text(self) -> str:
        """One line per finding, as the widget and the terminal show it."""
        head = "fix accepted" if self.passed else "fix not accepted"
        lines = [f"{head}: {self.symptom}" if self.symptom else head]
        return "\n".join(lines + [f"  - {p}" for p in self.problems])

    def as_dict(self) -> dict:
        return {"passed": self.passed, "symptom": self.symptom, "problems": list(self.problems),
                "trained": list(self.trained)}


@dataclass
class Training:
    """What one run did to its parameters: values at first use, then moved / given a gradient."""

    start: dict[int, torch.Tensor] = field(default_factory=dict)

    def hook(self, module: nn.Module, args) -> None:
        for p in module.parameters(recurse=False):
            if id(p) not in self.start:
                self.start[id(p)] = p.detach().clone()

    def fingerprint(self, namespace: dict) -> dict[str, tuple[bool, bool]]:
        """{"model.0.weight": (moved, has a non-zero gradient)} over the namespace's modules."""
        out = {}
        for name, value in list(namespace.items()):
            if name.startswith("_") or not isinstance(value, nn.Module):
                continue
            for pname, p in value.named_parameters():
                if p.is_meta:  # no values: a meta parameter can neither move nor hold a gradient
                    out[f"{name}.{pname}"] = (False, False)
                    continue
                before = self.start.get(id(p))
                moved = before is not None and not torch.equal(before, p.detach())
                grad = p.grad is not None and bool(torch.count_nonzero(p.grad))
                out[f"{name}.{pname}"] = (moved, grad)
        return out


@contextlib.contextmanager
def watching():
    """Record every parameter's value the first time its module runs forward."""
    training = Training()
    handle = nn.modules.module.register_module_forward_pre_hook(training.hook)
    try:
        yield training
    finally:
        handle.remove()


def _run(drill: Drill, code: str, tag: str) -> tuple[CodeRun, dict]:
    # every run starts from one random state (not the one the last run left): an edit that drops
    # the code's own seed draws other numbers than the fixed code, in any order of runs
    with watching() as training, torch.random.fork_rng(devices=[]):
        torch.manual_seed(START_SEED)
        run = drill.runner(code, f"{drill.id}.{tag}")
    return run, training.fingerprint(_without_loop_variables(run.namespace, code))


def _without_loop_variables(namespace: dict, code: str) -> dict:
    """The namespace without what the code's top-level loops leave behind: ``layer``, after
    ``for layer in layers``, names the last layer of the model, not a module of its own (an edit
    that drops the loop has none)."""
    leftovers = {n.id for stmt in ast.parse(code).body if isinstance(stmt, (ast.For, ast.AsyncFor))
                 for n in ast.walk(stmt.target) if isinstance(n, ast.Name)}
    return {k: v for k, v in namespace.items() if k not in leftovers}


_REFERENCE: dict[tuple[str, int], tuple[CodeRun, dict]] = {}


def reference(drill: Drill) -> tuple[CodeRun, dict]:
    """The fixed code's run and training fingerprint (kept: the fixed code never changes)."""
    key = (drill.id, drill.variant_index)
    if key not in _REFERENCE:
        _REFERENCE[key] = _run(drill, drill.fixed_code, "fixed")
    return _REFERENCE[key]


def _training_problems(ref: dict, got: dict) -> list[str]:
    problems = []
    for key, (moved, grad) in ref.items():
        if key not in got:
            problems.append(f"{key} is gone (the fixed code trains it)")
        elif moved and not got[key][0]:
            problems.append(f"{key} never changes: the fixed code trains it")
        elif grad and not got[key][1]:
            problems.append(f"{key} gets no gradient: the fixed code gives it one")
    return problems


class _Results(ast.NodeVisitor):
    """Collects the names bound outside loops, functions, classes and comprehensions."""

    def __init__(self):
        self.names: set[str] = set()

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Store):
            self.names.add(node.id)

    def _skip(self, node: ast.AST) -> None:
        """A loop's variables and body are its last pass's temporaries; a function's are local."""

    visit_For = visit_AsyncFor = visit_While = visit_FunctionDef = visit_AsyncFunctionDef = _skip
    visit_ClassDef = visit_Lambda = visit_ListComp = visit_SetComp = visit_DictComp = _skip
    visit_GeneratorExp = _skip


def assigned_names(code: str) -> set[str]:
    """The names ``code`` assigns outside loops and functions (inside ``if``/``with``/``try`` too):
    what the code "returns". A loop variable, or what a loop's body assigns, is the last pass's
    temporary, which a fix may drop (summing without the loop, say). A result compares as tensors
    (``_comparable``: a Python number as a 0-dim tensor, so a float total equals a tensor one)."""
    visitor = _Results()
    visitor.visit(ast.parse(code))
    return visitor.names


def _comparable(value) -> list[torch.Tensor] | None:
    """``value`` as tensors to compare: ``tensors_of``, or a Python number as a 0-dim tensor (a
    total kept as a float compares with one kept as a tensor)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [torch.tensor(float(value), dtype=torch.float64)]
    return tensors_of(value)


def tensors_of(value) -> list[torch.Tensor] | None:
    """``value`` as a list of tensors (a tensor, or a list or tuple of them), else None."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return list(value)
    return None


def _output_problems(ref: CodeRun, got: CodeRun, names: set[str]) -> list[str]:
    """The results the buggy code computes (``names``) that the fixed code keeps must be there,
    with the fixed code's shapes and values."""
    problems = []
    for name in sorted(names):
        want = _comparable(ref.namespace.get(name))
        if want is None:
            continue
        have = _comparable(got.namespace.get(name))
        if have is None or len(have) != len(want):
            problems.append(f"{name} is no longer computed as the fixed code computes it")
        elif any(h.shape != w.shape for h, w in zip(have, want, strict=True)):
            problems.append(f"{name} has other shapes than the fixed code's")
        elif any(h.is_meta or w.is_meta for h, w in zip(have, want, strict=True)):
            continue  # a meta tensor has a shape but no values (a drill's job check compares them)
        elif not all(torch.allclose(h.detach().double(), w.detach().double(), RTOL, ATOL, equal_nan=True)
                     for h, w in zip(have, want, strict=True)):
            problems.append(f"{name} holds other values than the fixed code computes")
    return problems


def judge_edit(drill: Drill, code: str) -> FixVerdict:
    """Judge ``code``, an edit of ``drill``'s buggy code: symptom gone and the job still done."""
    try:
        compile(code, f"<edit of {drill.id}>", "exec")
    except SyntaxError as err:
        return FixVerdict(False, problems=(f"the code does not compile: {err.msg} (line {err.lineno})",))
    run, trained = _run(drill, code, "edit")
    if run.error is not None:
        return FixVerdict(False, problems=(f"the code raises {run.error_text}",))
    try:
        symptom: Symptom = drill.measure(run)
    except Exception as err:  # noqa: BLE001 - an edit that removed what the measurement reads
        return FixVerdict(False, problems=(f"the drill's measurement cannot read the result: "
                                           f"{type(err).__name__}: {err}",))
    problems = [f"the symptom is still there: {symptom.summary}"] if symptom.buggy else []
    ref_run, ref_trained = reference(drill)
    if any(moved for moved, _ in ref_trained.values()) or any(g for _, g in ref_trained.values()):
        problems += _training_problems(ref_trained, trained)
    else:
        free = {ref_run.aliases.get(n, n) for n in drill.intermediates}
        problems += _output_problems(ref_run, run, assigned_names(drill.buggy_code) - free)
    if drill.job is not None:
        try:
            problem = drill.job(run, ref_run)
        except Exception as err:  # noqa: BLE001 - the edit removed what the job check reads
            problem = f"the job check cannot read the result: {type(err).__name__}: {err}"
        problems += [problem] if problem else []
    moved = tuple(k for k, (m, _) in trained.items() if m)
    return FixVerdict(not problems, symptom.summary, tuple(problems), moved)


def has_fixit(drill: Drill) -> bool:
    """Whether the drill offers fix-it mode: it declares other correct fixes, which the tests and
    ``course mutants --drills`` prove accepted beside every degenerate edit rejected."""
    return bool(drill.other_fixes)
