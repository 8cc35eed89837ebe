"""Which trainable tensors the optimizers hold (``course watch``): parameters no optimizer holds
(a head swapped in after the optimizer was built, layers kept in a plain list), and optimizer
tensors no model uses any more.

A model's parameters are those of its registered submodules, plus those of modules its forward
calls without registering them (a Python list or dict instead of ``nn.ModuleList``/``ModuleDict``):
seen by the forward hooks of the latest sampled step that ran one (a head replaced since, or the
parts of an earlier fold's model, are not called there).
"""

from __future__ import annotations

from course_utils.toolkit.watch.findings import Finding

UNREGISTERED = (" (called in forward() but not registered: kept in a plain list or dict, so "
                "model.parameters() leaves them out; use nn.ModuleList / nn.ModuleDict)")


def coverage(models, optimizers: list, step: int, seen_whole: bool = True) -> None:
    """Report trainable parameters no optimizer holds, and optimizer tensors no model has. Not
    ``seen_whole`` (no step was watched op by op from start to end): the models' own parameters
    only, as the modules a forward called outside them and what no model has need a whole step."""
    held = {id(p) for opt in optimizers for g in opt.param_groups for p in g["params"]}
    roots = models.live_roots()
    registered = {id(m) for r in roots for m in r.modules()}
    called = list(models.inner_called.items())
    latest = max((window for _, window in called), default=0)  # parts of an old model are not strays
    stray = [m for m, window in called if window == latest and id(m) not in registered]
    in_models = {id(p) for r in roots for p in r.parameters()}
    in_models.update(id(p) for m in stray for p in m.parameters())
    latest_root = max(models.trained_at.values(), default=0)  # an earlier fold's model has no optimizer
    for root in roots:
        if models.trained_at.get(root, latest_root) == latest_root:
            _missing(models, root, list(root.named_parameters()), held, step)
    if not seen_whole:
        return
    if stray:
        named = [(f"{type(m).__name__}.{n}", p) for m in stray for n, p in m.named_parameters()]
        _missing(models, stray[0], named, held, step, UNREGISTERED)
    if in_models:
        for opt in optimizers:
            _stale(models, opt, in_models, step)


def _missing(models, owner, params: list, held: set, step: int, how: str = "") -> None:
    trainable = [(n, p) for n, p in params if p.requires_grad]
    missing = [(n, p) for n, p in trainable if id(p) not in held]
    got_grad = any(p.grad is not None for _, p in missing)
    if got_grad and all(_zeroed(p) for _, p in missing):
        return  # the script zeroes their gradients itself: frozen on purpose, kept out of the optimizer
    if not missing or not (len(missing) < len(trainable) or got_grad) or (how and not got_grad):
        return  # an unregistered module that gets no gradient: a frozen helper kept out on purpose
    count = sum(p.numel() for _, p in missing)
    more = f" and {len(missing) - 4} more" if len(missing) > 4 else ""
    names = ", ".join(n for n, _ in missing[:4]) + more
    got = "get gradients" if got_grad else "are trainable"
    models.watcher.log.add(
        Finding(
            "not in optimizer",
            f"{names} ({count} values, requires_grad=True) {got} but no optimizer holds them: "
            f"they never change{how}",
            models.site_of(missing[0][1]),
            step,
            subject=f"{type(owner).__name__}@{id(owner)}",
        )
    )


def _zeroed(p) -> bool:
    """A gradient that exists and is all zeros after backward: cleared by the script's own hand."""
    g = p.grad
    return g is not None and not g.is_sparse and not bool(g.any())


def _stale(models, opt, in_models: set, step: int) -> None:
    params = [p for g in opt.param_groups for p in g["params"]]
    stale = [p for p in params if id(p) not in in_models and not _around_a_model(models, p)]
    if not stale or not (len(stale) < len(params) or all(p in models.param_info for p in stale)):
        return
    info = models.param_info.get(stale[0])
    what = (f"{type(info[1]).__name__}.{info[2]}" if info else "a tensor") + (
        f" and {len(stale) - 1} more" if len(stale) > 1 else ""
    )
    shapes = ", ".join(str(tuple(p.shape)) for p in stale[:4])
    models.watcher.log.add(
        Finding(
            "stale optimizer",
            f"{type(opt).__name__} holds {len(stale)} tensors ({shapes}) that no model has any more "
            f"({what}): its steps go nowhere",
            models.site_of(stale[0]),
            step,
            subject=f"{type(opt).__name__}@{id(opt)}",
        )
    )


def _around_a_model(models, p) -> bool:
    """Whether ``p`` belongs to a module that contains a model seen running: its own parameters
    (a ViT's class token) are used although the loop calls its parts, never the module itself."""
    info = models.param_info.get(p)
    roots = {id(r) for r in models.live_roots()}
    return info is not None and any(id(m) in roots for m in info[1].modules())
