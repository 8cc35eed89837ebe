"""What the deep windows add up to (``course watch``): the same host read, the same host-built
copy or the same fallback in two or more sampled steps is *per step*; tensors a sampled step made
that are still alive two windows (and at least two steps) later are memory that grows.

A tensor built on the host and copied every step is a finding when the model's own code builds it
(a mask or positions made in ``forward``), when it is a host array moved slice by slice, or when the
loop rebuilds the same matrix every step (a mask made outside the model). Anything else the loop
builds on the host and moves is the batch itself in most scripts (targets, labels, drawn data): a
note.

One or two reads per pass (``loss.item()``, an accuracy, lengths for packing, for logging) are a
note: the usual cost of logging; one per forward of a rollout (an action the environment needs on
the host) is not even that. Three or more per pass is the hot-loop problem; a pass is a forward
or a backward (gradient accumulation reads once per micro-batch, a policy rollout once per action).
Survivors count when they carry autograd history (the graph of every step stays alive) or reach
1 MiB per step.
"""

from __future__ import annotations

import gc
from collections import Counter

import torch
from torch import nn

from course_utils.toolkit.watch.findings import Finding, Site

MIB = 2**20


def _holder(obj, mine) -> str:
    """Who keeps ``obj`` alive: a variable that is the tensor itself (a module's global, an
    object's attribute), or a list or dict, and the name it has where it is stored."""
    ours = {id(mine), *(id(v) for v in mine.values())}
    for ref in gc.get_referrers(obj):
        if ref is gc.garbage or id(ref) in ours:
            continue
        variable = _variable(ref, obj)
        if variable:
            return f"; held by {variable}"
        if isinstance(ref, (list, dict)):
            size = f"a {type(ref).__name__} of {len(ref)} items"
            for owner in gc.get_referrers(ref):
                if isinstance(owner, dict):
                    name = next((k for k, v in owner.items() if v is ref and isinstance(k, str)), None)
                    if name is not None:
                        return f"; held by {size} named `{name}`"
            return f"; held by {size}"
    return ""


def _variable(ref, obj) -> str | None:
    """``ref`` as a variable that holds ``obj`` itself: a module's globals (a running total at a
    script's top level) or an object's attribute; None for a list or a dict of data."""
    if isinstance(ref, dict):
        if not (isinstance(ref.get("__name__"), str) and "__builtins__" in ref):
            owner = next((o for o in gc.get_referrers(ref) if getattr(o, "__dict__", None) is ref), None)
            return _attribute(owner, obj) if owner is not None else None
        name = next((k for k, v in ref.items() if v is obj and isinstance(k, str)), None)
        return f"the global variable `{name}`" if name else None
    if isinstance(ref, (list, tuple, set)) or type(ref).__module__ in ("builtins", "types"):
        return None  # containers, frames, functions, cells
    return _attribute(ref, obj)


def _attribute(owner, obj) -> str | None:
    namespace = getattr(owner, "__dict__", None)
    if not isinstance(namespace, dict):
        return None
    name = next((k for k, v in namespace.items() if v is obj and isinstance(k, str)), None)
    return f"the attribute `{name}` of a {type(owner).__name__}" if name else None


_RANDOM = {f"torch.{n}" for n in ("rand", "randn", "randint", "randperm", "normal", "bernoulli",
                                  "multinomial")}


def in_model_forward(frame, depth: int = 40) -> bool:
    """Whether ``frame`` runs inside a model's ``forward`` (a loss module's does not count)."""
    while frame is not None and depth:
        if frame.f_code.co_name == "forward":
            owner = frame.f_locals.get("self")
            if isinstance(owner, nn.Module) and not isinstance(owner, nn.modules.loss._Loss):
                return True
        frame, depth = frame.f_back, depth - 1
    return False


def fingerprint(t) -> tuple:
    """(shape, hash of the bytes) of a host tensor up to 1 MiB; the hash is None above that."""
    shape = tuple(t.shape)
    if t.layout != torch.strided or t.nbytes > MIB:
        return shape, None
    try:
        data = t.detach().reshape(-1).contiguous().view(torch.uint8)
        return shape, hash(data.numpy().tobytes())
    except (RuntimeError, TypeError):
        return shape, None


def _matrix(shape: tuple) -> bool:
    return sum(1 for n in shape if n > 1) >= 2


def _passes(watcher) -> tuple[int, int]:
    """(backward passes, top-level forwards with autograd on) the watcher has counted so far."""
    return watcher.backwards, watcher.models.top_forwards


class DeepJudge:
    """Counts, across deep windows, where syncs, copies, fallbacks and survivors happen."""

    def __init__(self, watcher):
        self.watcher = watcher
        self.closed = 0
        self.sync_sites: dict[Site, dict] = {}
        self.sync_totals: list[float] = []  # host reads per backward pass, one entry a window
        self.passes_at_open = (0, 0)  # the watcher's backward and forward counts when the window opened
        self.copy_sites: dict[tuple, dict] = {}
        self.fallback_sites: dict[tuple, set] = {}
        self.allocs: list[tuple] = []  # (window, step, allocs)
        self.cut_windows = 0
        self.survivors: dict[Site, dict] = {}

    def close(self, ops, step: int) -> None:
        """Fold one finished window into the counts and report what became certain."""
        self.closed += 1
        window = self.closed
        self._syncs(ops.syncs, {id(n) for n in ops.loss_nodes}, window, step)
        ops.loss_nodes = []
        self._copies(ops.copies, window, step)
        for op, site in ops.fallbacks:
            seen = self.fallback_sites.setdefault((op, site), set())
            seen.add(window)
            if len(seen) >= 2:
                self.watcher.log.add(
                    Finding(
                        "fallback",
                        f"{op} runs in every step and has no MPS kernel",
                        site,
                        step,
                        subject=f"{op}@{site}",
                    )
                )
        self.allocs.append((window, step, ops.allocs))
        ops.syncs, ops.copies, ops.fallbacks, ops.allocs = [], [], [], []
        ops.dead_units.close(step)

    def _syncs(self, syncs: list, losses: set, window: int, step: int) -> None:
        """Reads per pass (accumulation reads once per micro-batch, a rollout once per action). Reads
        of loss values (a one-element value whose autograd node is at or near a backward's root,
        ``losses``: the loss, the terms it was summed from) count as one wait per pass however many
        there are (the first drains the queue, the terms are computed by then), and alone they are
        logging, not a finding; nor is one read per forward of a rollout (more forwards than
        backwards: the action an environment needs on the host);
        three waits or more per pass is a host sync, one or two a note."""
        w = self.watcher
        backwards, forwards = (now - then for now, then in zip(_passes(w), self.passes_at_open, strict=True))
        passes = max(1, backwards, forwards)
        syncs = [(site, kind, node is not None and id(node) in losses) for site, kind, node in syncs]
        reads = sum(1 for *_, loss in syncs if loss)
        self.sync_totals.append((len(syncs) - reads + min(reads, passes)) / passes)
        per_site = Counter(site for site, *_ in syncs)
        rollout = forwards > max(1, backwards)
        for site, kind, loss in syncs:
            entry = self.sync_sites.setdefault(
                site, {"windows": set(), "kinds": set(), "loss": True, "action": True}
            )
            entry["windows"].add(window)
            entry["kinds"].add(kind)
            entry["loss"] = entry["loss"] and loss
            entry["action"] = entry["action"] and rollout and per_site[site] <= forwards
        per_step = sorted(self.sync_totals)[len(self.sync_totals) // 2]
        many = per_step >= 3
        for site, entry in self.sync_sites.items():
            if len(entry["windows"]) < 2 or 2 * len(entry["windows"]) < self.closed:
                continue
            if (entry["loss"] or entry["action"]) and not many:
                continue
            kinds = ", ".join(sorted(entry["kinds"]))
            self.watcher.log.add(
                Finding(
                    "host sync" if many else "note",
                    f"{kinds}: the host waits for the device here in {len(entry['windows'])} of "
                    f"{self.closed} sampled steps ({per_step:.3g} waits per forward/backward pass in all)"
                    + ("" if many else "; a read or two per pass is the usual cost of logging"),
                    site,
                    step,
                    subject=f"sync {site}",
                    fix="" if many else "read it every N steps if the loop is fast",
                )
            )

    def _copies(self, copies: list, window: int, step: int) -> None:
        for origin, how, site, nbytes, model_side, (shape, digest) in copies:
            entry = self.copy_sites.setdefault(
                (origin, site),
                {"windows": set(), "how": how, "bytes": 0, "model": False, "prints": set(), "shape": shape},
            )
            entry["windows"].add(window)
            entry["bytes"] = max(entry["bytes"], nbytes)
            entry["model"] = entry["model"] or model_side
            if len(entry["prints"]) < 4:
                entry["prints"].add(digest)
        for (origin, site), entry in self.copy_sites.items():
            if len(entry["windows"]) >= 2 and 2 * len(entry["windows"]) >= self.closed:
                self._report_copy(origin, site, entry, step)

    def _report_copy(self, origin, site, entry: dict, step: int) -> None:
        built = f"built by {entry['how']} at {origin}" if origin != site else f"made by {entry['how']}"
        drawn = entry["how"] in _RANDOM  # fresh data, not a constant rebuilt: a choice, not a bug
        constant = len(entry["prints"]) == 1 and None not in entry["prints"]
        rebuilt = not drawn and (entry["model"] or (constant and _matrix(entry["shape"])))
        if rebuilt:
            tail, fix = "", ""
        elif drawn:
            tail = "; drawing it there (device=...) saves the copy but changes the random numbers"
            fix = "draw it on the device if the copy shows in a profile"
        else:
            tail = "; in most loops this is the batch itself" + (
                ", but it is the same every step" if constant else ""
            )
            fix = "build it once on the device (device=...) if it is the same every step"
        self.watcher.log.add(
            Finding(
                "host copy" if rebuilt else "note",
                f"a tensor {built} is copied to the device every step "
                f"({entry['bytes'] / 1024:.1f} KiB each time){tail}",
                site,
                step,
                subject=f"copy {origin} {site}",
                fix=fix,
            )
        )

    def keep_allocs(self, allocs: list, step: int) -> None:
        """The tensors a window cut for its cost saw made: whether they outlive their step does not
        depend on the window being complete (a graph kept across steps makes each backward longer,
        so its windows are the ones cut)."""
        if allocs:
            self.cut_windows -= 1  # negative ids: apart from the complete windows' numbers
            self.allocs.append((self.cut_windows, step, allocs))

    def judge(self, step: int) -> None:
        """Tensors a window made that are still alive two steps after it closed (cheap: weakrefs)."""
        keep = []
        for made_in, made_at, allocs in self.allocs:
            if step - made_at < 2:
                keep.append((made_in, made_at, allocs))
                continue
            by_site: dict[Site, list] = {}
            for ref, site, nbytes, history in allocs:
                t = ref()
                if t is not None:
                    by_site.setdefault(site, []).append((t, nbytes, history))
            for site, alive in by_site.items():
                history = any(h for _, _, h in alive)
                nbytes = sum(n for _, n, _ in alive)
                if not history and nbytes < MIB:
                    continue
                entry = self.survivors.setdefault(site, {"windows": set(), "bytes": 0, "history": False})
                entry["windows"].add(made_in)
                entry["bytes"] += nbytes
                entry["history"] = entry["history"] or history
                if len(entry["windows"]) >= 2:
                    self._report_growth(site, entry, alive[0][0], step, by_site)
        self.allocs = keep

    def _report_growth(self, site: Site, entry: dict, sample, step: int, mine) -> None:
        graph = " with their autograd graphs" if entry["history"] else ""
        per = entry["bytes"] / len(entry["windows"])
        self.watcher.log.add(
            Finding(
                "memory growth",
                f"tensors made here in {len(entry['windows'])} sampled steps are still "
                f"alive steps later{graph} (~{per / 1024:.1f} KiB of tensor data per step)"
                f"{_holder(sample, mine)}",
                site,
                step,
                subject=f"grow {site}",
            )
        )
