"""Job checks of fix-it drills that re-run the learner's code or call what it defines.

A drill's measurement reads one run on one input; a job check (``job(edited run, fixed run) ->
problem or None``, see ``fixit.judge_edit``) asks whether the edit still does the code's job
where that one run cannot tell: the code run on another device, a function called on fresh
inputs, a module's forward calls counted, every gradient compared. A symptom silenced on the
drill's one input, or on the one device it runs on, is not taken for a fix.
"""

from __future__ import annotations

import copy
import dataclasses
import logging

import torch
from torch import nn

from course_utils.drills.core import CodeRun, run_code
from course_utils.drills.fixit import ATOL, RTOL


def _close(got, want) -> bool:
    return (isinstance(got, torch.Tensor) and got.shape == want.shape
            and torch.allclose(got.detach().double(), want.detach().double(), RTOL, ATOL, equal_nan=True))


def _rerun(run: CodeRun, source: str) -> CodeRun:
    """``source`` run in a fresh namespace, read through ``run``'s variant names."""
    return dataclasses.replace(run_code(source, "job"), aliases=dict(run.aliases))


def _error(err: BaseException) -> str:
    return f"{type(err).__name__}: {str(err).strip().splitlines()[0][:90] if str(err).strip() else ''}"


# --- devices.tensor_created_in_forward: the model's device is "meta" (values exist on the CPU only)


def runs_on_every_device(run: CodeRun, ref: CodeRun) -> str | None:
    """The logits are made on the model's device; the same model runs on the CPU too (no device
    written into forward()); and the code, run on the CPU, computes the fixed code's logits."""
    logits = run.get("logits")
    if not isinstance(logits, torch.Tensor) or not logits.is_meta:
        return "the logits are not computed on the model's device ('meta' here, mps on a Mac)"
    cpu_model = copy.deepcopy(run["model"]).to_empty(device="cpu")
    try:
        cpu_model(torch.zeros(run["ids"].shape, dtype=torch.long))
    except Exception as err:  # noqa: BLE001 - a forward that only works on one device
        return f"the same model on the CPU fails ({_error(err)}): forward() must work on any device"
    mine, want = (_rerun(r, r.source.replace('"meta"', '"cpu"').replace("'meta'", "'cpu'"))
                  for r in (run, ref))
    if mine.error is not None or not _close(mine.get("logits"), want["logits"]):
        return "run on the CPU, the code computes other logits than the fixed code"
    return None


# --- memory.checkpoint_no_grad_input


def _recomputed_in_backward(run: CodeRun, name: str) -> int:
    """How often module ``name`` runs forward inside a backward pass when the code runs again:
    a checkpointed block runs once more there to rebuild the activations it did not keep."""
    calls: dict[int, int] = {}

    def hook(module, args):  # before forward: a recomputation may stop early, once it has what it needs
        if torch._C._current_graph_task_id() != -1:  # inside autograd's engine (as torch.autograd.graph does)
            calls[id(module)] = calls.get(id(module), 0) + 1

    handle = nn.modules.module.register_module_forward_pre_hook(hook)
    try:
        again = _rerun(run, run.source)
    finally:
        handle.remove()
    return calls.get(id(again.get(name)), 0)


def same_gradients(run: CodeRun, ref: CodeRun) -> str | None:
    """Every gradient the fixed code computes, the edit computes with the same values."""
    for name, module in ref.namespace.items():
        if name.startswith("_") or not isinstance(module, nn.Module):
            continue
        mine = dict(run.namespace[name].named_parameters()) if isinstance(run.namespace.get(name),
                                                                            nn.Module) else {}
        for pname, p in module.named_parameters():
            got = mine.get(pname)
            if p.grad is not None and (got is None or got.grad is None or not _close(got.grad, p.grad)):
                return f"{name}.{pname}'s gradient is not the one the fixed code computes"
    return None


def still_checkpointed(run: CodeRun, ref: CodeRun) -> str | None:
    """The fixed code's gradients, with block1 still recomputed in backward (its memory saving)."""
    problem = same_gradients(run, ref)
    if problem:
        return problem
    if not _recomputed_in_backward(run, "block1"):
        return ("block1 is not recomputed during backward: it is no longer checkpointed, so the "
                "memory its activations take is back")
    return None


# --- attention.heads_split_by_view


def attention_matches_module(run: CodeRun, ref: CodeRun) -> str | None:
    """The edited ``attention()`` itself matches nn.MultiheadAttention on a fresh batch."""
    mha, x = run["mha"], run["x"]
    fresh = torch.randn(x.shape, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = mha(fresh, fresh, fresh, need_weights=False)[0]
        got = run["attention"](fresh)
    if not _close(got, want):
        return "attention() on a fresh batch still differs from nn.MultiheadAttention"
    return None


# --- attention.fp16_scores_overflow


def same_dtypes(*names: str):
    """A job check: the tensors ``names`` (the attention's inputs and output) keep the fixed code's
    dtypes; a fix may compute inside in float32, but the model around it still gets float16."""
    def job(run: CodeRun, ref: CodeRun) -> str | None:
        for name in names:
            got, want = run.get(name), ref[name]
            if getattr(got, "dtype", None) != want.dtype:
                return f"{name} is {getattr(got, 'dtype', None)}, not {want.dtype} as in the fixed code"
        return None
    return job


# --- performance.compile_graph_break


def _explain(step, x, w):
    logger = logging.getLogger("torch._dynamo")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        return torch._dynamo.explain(step)(x, w)
    finally:
        logger.setLevel(level)


def one_graph_same_results(run: CodeRun, ref: CodeRun) -> str | None:
    """``step`` itself compiles to one graph with no break, and returns the fixed step's results
    on inputs that take either side of the branch."""
    step, fixed = run["step"], ref["step"]
    x, w = (torch.randn(8, 8, generator=torch.Generator().manual_seed(s)) for s in (1, 2))
    explained = _explain(step, x, w)
    if explained.graph_count != 1 or explained.break_reasons:
        return (f"step compiles to {explained.graph_count} graphs with "
                f"{len(explained.break_reasons)} breaks; the fixed step compiles to one")
    for scale in (1.0, 0.01, -1.0):  # large, small and negative activations: both sides of the branch
        if not _close(step(x * scale, w), fixed(x * scale, w)):
            return f"step(x * {scale}, w) returns another value than the fixed step"
    return None


# --- distributed.sampler_without_set_epoch


def same_shares(run: CodeRun, ref: CodeRun) -> str | None:
    """Each epoch this rank loads what the fixed code loads: its share of the permutation every
    rank draws from seed + epoch (a shuffle of its own, or of the whole dataset, is not that)."""
    if run.get("orders") != ref["orders"]:
        return ("this rank loads other samples than the fixed code: each epoch every rank must draw "
                "the same permutation (seed + epoch) and take its own share of it")
    return None


# --- seed.layernorm_cpu_round_trip


def normalises_where_it_lives(run: CodeRun, ref: CodeRun) -> str | None:
    """The model computes the fixed model's outputs and passes back its gradients, and runs once
    moved to another device ('meta' stands in for mps: a copy to the CPU fails there, as the
    error does on a Mac)."""
    model, fixed = run["model"], ref["model"]
    x, x_ref = run["x"].clone().requires_grad_(), ref["x"].clone().requires_grad_()
    got, want = model(x), fixed(x_ref)
    if not _close(got, want):
        return "the model computes other outputs than the fixed code: the LayerNorms must still normalise"
    got.sum().backward()
    want.sum().backward()
    if not _close(x.grad, x_ref.grad):
        return "the gradient reaching the input is not the fixed code's: the LayerNorms must pass it back"
    try:
        with torch.no_grad():
            copy.deepcopy(model).to("meta")(run["x"].to("meta"))
    except Exception as err:  # noqa: BLE001 - the Mac's device mismatch, emulated
        return f"moved to another device ('meta', standing in for mps), the model fails: {_error(err)}"
    return None
