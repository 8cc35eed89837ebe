"""Run one training script under one debugging tool, attached as that tool's documentation says,
and write what the tool reported as JSON (used by ``bench_watch.py``; not part of the test suite).

    python watch_peers.py TOOL OUT.json SCRIPT.py      TOOL: watch | torcheck | cockpit | anomaly | plain

The glue for each tool is one function below (``glue_<tool>``); ``bench_watch.py`` counts its lines.
The scripts are not edited: where a tool's documentation says "add these lines after you build the
model and the optimizer" (torcheck, cockpit), the glue runs those lines at that moment, found with
a wrapper on ``Optimizer.__init__`` and module forward hooks.

- watch: ``course watch script.py`` (zero glue: the watcher attaches through PyTorch's own hooks).
- torcheck 1.0.1 (README): ``torcheck.register(optimizer)``; ``add_module_changing_check`` for the
  trainable parameters (``add_tensor_unchanging_check`` for frozen ones), ``add_module_nan_check``,
  ``add_module_inf_check`` for the model. It raises RuntimeError at ``optimizer.step()``.
- cockpit 1.0.2 (README): ``model = extend(model)``, ``loss_fn = extend(loss_fn)``, a ``Cockpit`` on
  ``model.parameters()`` with ``configuration("economy")``, and every ``loss.backward()`` inside
  ``with cockpit(step, info={batch_size, individual_losses, loss, optimizer})``; its tracked
  quantities are read afterwards (``get_output()``), as the plots would show them.
- anomaly: ``torch.autograd.set_detect_anomaly(True)`` for the whole run (its documentation).
"""

from __future__ import annotations

import gc
import json
import math
import os
import runpy
import sys
import time
import traceback

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))  # the repository, for course_utils


def run_script(script: str):
    """Run the script as ``__main__``; the exception it ended with, or None."""
    sys.argv = [script]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit:
        return None
    except BaseException as err:  # noqa: BLE001 - the tool's error (or the script's) is the result
        traceback.print_exc()
        return err
    return None


def roots_holding(params) -> list[nn.Module]:
    """The live modules that own any of ``params`` and are not inside another such module."""
    ids = {id(p) for p in params}
    owners = [
        m for m in gc.get_objects() if isinstance(m, nn.Module) and any(id(p) in ids for p in m.parameters())
    ]
    inner = {id(c) for m in owners for c in m.modules() if c is not m}
    return [m for m in owners if id(m) not in inner]


def after_optimizer_init(callback) -> None:
    """Call ``callback(optimizer)`` right after each optimizer is built."""
    original = torch.optim.Optimizer.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        callback(self)

    torch.optim.Optimizer.__init__ = init


# --- glue per tool ------------------------------------------------------------------------------------


def glue_watch(script: str) -> dict:
    from course_utils.toolkit.watch.watcher import Watcher

    watcher = Watcher(verbose=False).install()
    error = run_script(script)
    watcher.uninstall()
    return {
        "error": repr(error) if error else None,
        "signals": [[f.kind, f.severity, f.what] for f in watcher.findings],
    }


def glue_torcheck(script: str) -> dict:
    import torcheck

    def attach(optimizer):
        torcheck.register(optimizer)
        params = [p for g in optimizer.param_groups for p in g["params"]]
        for model in roots_holding(params):
            for name, p in model.named_parameters():
                check = (
                    torcheck.add_tensor_changing_check
                    if p.requires_grad
                    else torcheck.add_tensor_unchanging_check
                )
                check(p, name, module_name="model")
            torcheck.add_module_nan_check(model, module_name="model")
            torcheck.add_module_inf_check(model, module_name="model")

    after_optimizer_init(attach)
    error = run_script(script)
    text = str(error) if error is not None else ""
    said = ("should change", "should not change", "contains NaN", "contains inf", "belong to any optimizer")
    signals = [
        ["torcheck", "error", line.strip()] for line in text.splitlines() if any(s in line for s in said)
    ]
    return {"error": repr(error)[:400] if error else None, "signals": signals}


def glue_anomaly(script: str) -> dict:
    torch.autograd.set_detect_anomaly(True)
    error = run_script(script)
    text = str(error) if error is not None else ""
    found = "returned nan" in text or "nan values" in text.lower() or "inf values" in text.lower()
    return {
        "error": repr(error)[:400] if error else None,
        "signals": [["anomaly", "error", text.splitlines()[0]]] if found else [],
    }


def glue_cockpit(script: str) -> dict:
    from backpack import extend
    from cockpit import Cockpit
    from cockpit.utils.configuration import configuration

    state = {"cockpit": None, "model": None, "optimizer": None, "step": 0, "batch": None, "losses": None}

    def on_forward(module, args):
        if isinstance(module, nn.modules.loss._Loss):
            if not getattr(module, "_extended", False):
                extend(module)
                module._extended = True
                state["per_sample"] = type(module)(reduction="none") if hasattr(module, "reduction") else None
            per_sample = state.get("per_sample")
            if per_sample is not None and len(args) >= 2:
                with torch.no_grad():
                    state["losses"] = per_sample.forward(*args).reshape(len(args[0]), -1).mean(1)
        elif state["model"] is None and next(module.parameters(), None) is not None:
            state["model"] = extend(module)
        if module is state["model"] and args and isinstance(args[0], torch.Tensor):
            state["batch"] = args[0].shape[0]

    nn.modules.module.register_module_forward_pre_hook(on_forward)
    after_optimizer_init(lambda opt: state.__setitem__("optimizer", state["optimizer"] or opt))
    original = torch.autograd.backward

    def backward(tensors, *args, **kwargs):
        model = state["model"]
        if model is None or not isinstance(tensors, torch.Tensor):
            return original(tensors, *args, **kwargs)
        if state["cockpit"] is None:
            state["cockpit"] = Cockpit(model.parameters(), quantities=configuration("economy"))
        cockpit, step = state["cockpit"], state["step"]
        info = {
            "batch_size": state["batch"] or 1,
            "loss": tensors,
            "optimizer": state["optimizer"],
            "individual_losses": state["losses"]
            if state["losses"] is not None
            else tensors.detach().reshape(1),
        }
        state["step"] += 1
        names = ("grad_tensors", "retain_graph", "create_graph")
        kwargs.update(zip(names, args, strict=False))  # Tensor.backward passes them by position
        with cockpit(step, info=info):
            kwargs["create_graph"] = cockpit.create_graph(step) or bool(kwargs.get("create_graph"))
            return original(tensors, **kwargs)

    torch.autograd.backward = backward
    error = run_script(script)
    output = state["cockpit"].get_output() if state["cockpit"] is not None else {}
    return {
        "error": repr(error)[:400] if error else None,
        "signals": cockpit_signals(output),
        "attached": state["cockpit"] is not None,
    }


# --- cockpit's instruments, read as its documentation reads them ---------------------------------------


def _series(output: dict, name: str) -> list:
    """One quantity over the tracked steps (``get_output()`` is {step: {quantity: value}})."""
    return [output[step][name] for step in sorted(output) if output[step].get(name) is not None]


def _total(value) -> float:
    if isinstance(value, (list, tuple)):
        return math.sqrt(sum(float(v) ** 2 for v in value))
    return float(value)


def cockpit_signals(output: dict) -> list:
    """What the cockpit's instruments show: a non-finite loss or gradient, a gradient norm that grows
    tenfold check after check, a parameter whose update size stays 0 while its gradient is not, a loss
    that does not move, an update size that shrinks a thousandfold, alpha far above 0 (overshooting)."""
    signals = []
    loss = [float(v) for v in _series(output, "Loss")]
    grads = [_total(v) for v in _series(output, "GradNorm")]
    updates = _series(output, "UpdateSize")
    if any(not math.isfinite(v) for v in loss + grads):
        signals.append(["non-finite", "instrument", "Loss or GradNorm is NaN/Inf"])
    run = grads[-6:]
    if len(run) == 6 and all(b > a for a, b in zip(run, run[1:], strict=False)) and run[-1] > 10 * run[0] > 0:
        signals.append(["growing grads", "instrument", "GradNorm keeps growing"])
    if (
        updates
        and grads
        and any(isinstance(u, (list, tuple)) and any(float(x) == 0 for x in u) for u in updates[1:])
        and any(g > 0 for g in grads)
    ):
        signals.append(["no update", "instrument", "UpdateSize is 0 for a parameter with a gradient"])
    if (
        len(loss) >= 6
        and max(loss[-6:]) - min(loss[-6:]) <= 1e-7 * abs(loss[-1])
        and any(g > 0 for g in grads)
    ):
        signals.append(["flat loss", "instrument", "Loss does not move"])
    sizes = [_total(u) for u in updates]
    if len(sizes) > 10 and max(sizes[:5]) > 0 and sizes[-1] < 1e-3 * max(sizes[:5]):
        signals.append(["update shrinks", "instrument", "UpdateSize fell 1000x"])
    alpha = [float(a) for a in _series(output, "Alpha") if a is not None and math.isfinite(float(a))]
    if len(alpha) >= 5 and sorted(alpha)[len(alpha) // 2] > 1:
        signals.append(["overshooting", "instrument", "Alpha > 1: steps overshoot the minimum"])
    return signals


def glue_plain(script: str) -> dict:
    return {"error": repr(run_script(script)), "signals": []}


def main() -> int:
    tool, out, script = sys.argv[1:4]
    started = time.process_time()
    result = globals()[f"glue_{tool}"](script)
    result["cpu_s"] = time.process_time() - started
    sys.stdout.flush()
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(result, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
