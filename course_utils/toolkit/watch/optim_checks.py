"""What an optimizer does that its schedule or its frozen parameters did not ask for (``course
watch``): parameters whose gradients are zero (frozen by zeroing, or ``requires_grad_(False)`` with
zero-filled gradients left behind) that still change, because weight decay and momentum do not
need a gradient; embedding rows that never get a gradient, decayed all the same; and a warm-up
that never finishes because a schedule sized in optimizer steps is stepped once per epoch.

All of it reads what the check steps already hold (the update and gradient norms of the batched
read), except the rows of an embedding with weight decay (one pass over its gradient and update
on check steps) and the end-of-run schedule verdict (one look at the schedulers).
"""

from __future__ import annotations

import torch

from course_utils.toolkit.watch.findings import Finding

STILL_AFTER = 3  # checked steps with a zero gradient and a change before it is reported
ROW_CHECKS = 5  # checked steps before the rows of an embedding are judged
TOUCHED_AT_MOST = 0.01  # embedding rows that ever had a gradient, as a share of its rows
WARMUP_STEPS = 50  # optimizer steps before an unfinished warm-up is judged
PER_EPOCH = 8  # optimizer steps per scheduler step that say "stepped once per epoch"


def _names(w, params: list) -> str:
    names = [w.models.name(p, "a parameter") for p in params[:4]]
    return ", ".join(names) + (f" and {len(params) - 4} more" if len(params) > 4 else "")


def still_moving(ow, still: list[tuple]) -> None:
    """``still``: (parameter, group, update norm, parameter norm) of the parameters whose gradient
    was all zero at this check step and that changed all the same. Reported only for a parameter
    meant to stay fixed (``meant_frozen``): a gradient of zero that backward itself left (an expert
    no token was routed to, a loss that was zero) moves a parameter through momentum and decay by
    design."""
    seen = {id(p) for p, *_ in still}
    for key in [k for k in ow.still if k not in seen]:
        del ow.still[key]  # a zero gradient and no change (or a real gradient): not this bug
        disarm(ow, key)
    for p, _group, moved, norm in still:
        count, top = ow.still.get(id(p), (0, 0.0))
        frozen = meant_frozen(ow, p)
        ow.still[id(p)] = (count + 1 if frozen is not False else 0, max(top, moved / norm if norm else 0.0))
        arm(ow, p)
    due = [(p, g) for p, g, *_ in still if ow.still[id(p)][0] >= STILL_AFTER]
    if not due:
        return
    w = ow.watcher
    p, group = due[0]
    count, top = ow.still[id(p)]
    decay = float(group.get("weight_decay", 0.0) or 0.0)
    moments = "momentum" in group and group["momentum"] or "betas" in group
    by = [f"weight decay {decay:g}"] if decay else []
    by += ["the momentum of earlier gradients"] if moments else []
    w.log.add(Finding(
        "decayed while frozen",
        f"{_names(w, [q for q, _ in due])}: the gradient was all zeros at {count} checked steps in a row, "
        f"yet {ow.name} changed {'it' if len(due) == 1 else 'them'} each time (by up to {top:.2g} of the "
        f"norm per step; {' and '.join(by) or 'the optimizer'} moves a parameter whose gradient is zero)",
        w.models.site_of(p) if w.models.site_of(p).line else w.where_step,
        w.step,
        subject=f"decayed while frozen {ow.name}",
    ))


def arm(ow, p) -> None:
    """From now on, keep the largest gradient value each backward leaves in ``p``, before the script
    can zero it (a post-accumulate-grad hook; one small reduction per backward, no read)."""
    if id(p) in ow.left_by_backward or not p.requires_grad:
        return
    slot = ow.left_by_backward[id(p)] = [None, None]

    def keep(param) -> None:
        if param.grad is not None and not param.grad.is_sparse:
            slot[1] = param.grad.detach().abs().amax()

    slot[0] = p.register_post_accumulate_grad_hook(keep)


def disarm(ow, key: int | None = None) -> None:
    """Remove the hook ``arm`` put on one parameter (by id), or on all."""
    for k in [key] if key is not None else list(ow.left_by_backward):
        slot = ow.left_by_backward.pop(k, None)
        if slot is not None:
            slot[0].remove()


def meant_frozen(ow, p) -> bool | None:
    """Whether a parameter with a zero gradient at the step was meant to stay fixed: it does not
    require a gradient (``requires_grad_(False)``, its zero-filled gradient left behind), or backward
    gave it a gradient that the script zeroed before the step. None: not known yet (no backward
    since ``arm``). False: backward itself left zeros, so momentum and decay move it by design."""
    if not p.requires_grad:
        return True
    slot = ow.left_by_backward.get(id(p))
    if slot is None or slot[1] is None:
        return None
    left, slot[1] = float(slot[1]), None  # one small read, on check steps of suspects only
    return left > 0


def untouched_rows(ow, params: list, groups: list) -> None:
    """Before a check step: embedding matrices under weight decay whose rows almost all never got a
    gradient (only a few rows are meant to train), yet changed since the last check: the decay
    shrinks the rows meant to stay. Compared from one check's start to the next, so a script that
    restores those rows after each step is quiet."""
    w = ow.watcher
    for p, group in zip(params, groups, strict=True):
        info = w.models.param_info.get(p)
        if info is None or not isinstance(info[1], torch.nn.Embedding) or p.grad is None or p.grad.is_sparse:
            continue
        with torch.no_grad():
            touched = (p.grad != 0).any(1)
            rows = torch.stack([p.sum(1), p.abs().sum(1)])
        count, ever, before = ow.rows.get(id(p), (0, None, None))
        if before is None or before.shape != rows.shape:
            ow.rows[id(p)] = (1, touched, rows)
            continue
        changed = (rows != before).any(0) & ~ever
        ever = ever | touched
        ow.rows[id(p)] = (count + 1, ever, rows)
        trained, total = int(ever.sum()), p.shape[0]
        if count + 1 < ROW_CHECKS or not 0 < trained <= max(1, TOUCHED_AT_MOST * total):
            continue
        moved = int(changed.sum())
        if moved >= 0.9 * (total - trained):
            w.log.add(Finding(
                "decayed while frozen",
                f"{w.models.name(p, 'an embedding')}: {trained} of its {total} rows had a gradient in "
                f"{count + 1} checked steps, yet {moved} of the other rows changed since the last check "
                f"(weight decay {float(group['weight_decay']):g} of {ow.name} shrinks rows whose gradient "
                "is zero)",
                w.models.site_of(p) if w.models.site_of(p).line else w.where_step,
                w.step + 1,
                subject=f"decayed rows {id(p)}",
            ))


def note_lr(ow, lr: float) -> None:
    """Every step's learning rate (read already): did it ever fall?"""
    if ow.lr_first is None:
        ow.lr_first = lr
    elif lr < ow.lr_last * (1 - 1e-9):
        ow.lr_fell = True
    ow.lr_last = lr


def watch_schedule(ow, optimizer) -> None:
    """On check steps after WARMUP_STEPS: how often the optimizer's scheduler has stepped and the
    peak it was given (the scheduler and the optimizer may be gone when the run ends)."""
    import weakref

    from course_utils.toolkit.watch.trends import _drivers

    if ow.steps < WARMUP_STEPS or ow.lr_fell:
        return
    if ow.schedulers is None:  # found once (a scan of the garbage collector's objects)
        ow.schedulers = [weakref.ref(s) for s in _drivers(optimizer)]
    group = optimizer.param_groups[0]
    peak = max(float(group.get("initial_lr", 0.0) or 0.0), float(group.get("max_lr", 0.0) or 0.0))
    for ref in ow.schedulers:
        scheduler = ref()
        if scheduler is not None and int(getattr(scheduler, "last_epoch", 0)) >= 1:
            ow.schedule = (type(scheduler).__name__, int(scheduler.last_epoch), ow.steps, peak)
            return


def unfinished_warmup(ow) -> None:
    """At the end of the run: the learning rate rose the whole run and ended far below the peak its
    scheduler was given, while the scheduler stepped once per many optimizer steps."""
    if ow.schedule is None or ow.lr_fell or ow.lr_first is None or not ow.lr_last > ow.lr_first:
        return
    name, calls, at, peak = ow.schedule
    if not peak or ow.lr_last >= 0.5 * peak or at < PER_EPOCH * calls:
        return
    ow.watcher.log.add(Finding(
        "lr schedule",
        f"{name}.step() was called {calls} times in {at} optimizer steps; the learning rate rose over the "
        f"whole run ({ow.steps} steps), from {ow.lr_first:.3g} to {ow.lr_last:.3g}, and never reached the "
        f"peak {peak:.3g} it was given: the warm-up did not finish (a schedule sized in optimizer steps, "
        "stepped once per epoch)",
        ow.watcher.step_site,
        ow.watcher.step,
        subject=f"lr schedule {ow.name}",
    ))
