"""Distributed bugs (lesson 07): a rank that skips a batch, so the other waits in a collective.

Real gloo, two processes on 127.0.0.1 (``dist_worker.main``, started with ``mp.spawn``). Every
process group gets ``timeout=`` (the default is 30 minutes for gloo, 10 for NCCL) and the parent
kills the workers at a hard bound, so the drill can never hang a lesson. ``investigate()`` runs the
bug, the two diagnoses (``monitored_barrier`` and ``TORCH_DISTRIBUTED_DEBUG=DETAIL``) and the fix in one
launch; ``stable_report()`` turns its results into lines that do not vary between runs.
"""

from __future__ import annotations

import json
import os
import re
import socket
import tempfile
import time
from dataclasses import dataclass, field

from course_utils.drills.core import CodeRun, Drill, Symptom, Variant, code, shuffled_question

TIMEOUT_S = 1.5  # every collective's timeout
BOUND_S = 45.0  # the parent kills any worker still alive after this many seconds
WORLD = 2

SKIP_BUGGY = code("""
    # every rank runs this; rank, world, dist and torch are given
    sums = []
    for step in range(4):
        if rank == 0 and step == 2:
            continue                             # rank 0 drops a batch that is too short
        grad = torch.tensor([float(step)])       # stands for this step's gradients
        dist.all_reduce(grad)                    # what DDP's backward() does every step
        sums.append(grad.item())
    dist.barrier()                               # end of the epoch
""")

SKIP_FIXED = code("""
    # every rank runs this; rank, world, dist and torch are given
    sums = []
    for step in range(4):
        skip = rank == 0 and step == 2           # rank 0 still drops that batch...
        grad = torch.zeros(1) if skip else torch.tensor([float(step)])
        dist.all_reduce(grad)                    # ...but joins the collective with zeros
        sums.append(grad.item())
    dist.barrier()                               # end of the epoch
""")

# Its timeout is half the collectives': it must report before the late rank's own timeout fires
# and that rank hangs up (rank 0 would then only see "Connection closed by peer").
MONITORED = SKIP_BUGGY.replace(
    "dist.barrier()                               # end of the epoch",
    "dist.monitored_barrier(timeout=timeout / 2, wait_all_ranks=True)   # names missing ranks")


@dataclass
class Launch:
    """What one launch of the workers produced: per phase, one result dict per rank (``error``,
    ``seconds``, ``values``; None when a rank left no result), plus how the processes ended."""

    phases: dict[str, list[dict | None]]
    wall_s: float
    killed: bool
    exitcodes: list[int | None]
    logs: list[str] = field(default_factory=list)
    timeout_s: float = TIMEOUT_S
    bound_s: float = BOUND_S


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gloo_available() -> bool:
    """Whether this torch can run the drill (torch.distributed with the gloo backend)."""
    import torch.distributed as dist

    return dist.is_available() and dist.is_gloo_available()


def _read(outdir: str, rank: int, suffix: str) -> str:
    path = os.path.join(outdir, f"rank{rank}.{suffix}")
    if not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read()


def launch(phases: list[tuple[str, str, str]], timeout_s: float = TIMEOUT_S,
           bound_s: float = BOUND_S, world: int = WORLD) -> Launch:
    """Start ``world`` gloo workers that run ``phases`` ((name, code, debug level) tuples) in
    order; wait at most ``bound_s`` seconds, then kill whatever still runs.

    Workers are started with the "spawn" method: from a script, call this under
    ``if __name__ == "__main__":`` (notebooks need nothing special)."""
    import torch.multiprocessing as mp

    from course_utils.drills import dist_worker

    specs = [{"name": n, "code": c, "debug": d} for n, c, d in phases]
    with tempfile.TemporaryDirectory(prefix="mps-detective-gloo-") as outdir:
        start = time.monotonic()
        context = mp.spawn(dist_worker.main, args=(world, free_port(), specs, outdir, timeout_s,
                                                   min(20.0, bound_s)),
                           nprocs=world, join=False)
        procs = context.processes
        while time.monotonic() - start < bound_s and any(p.is_alive() for p in procs):
            time.sleep(0.02)
        killed = any(p.is_alive() for p in procs)
        for p in procs:
            if p.is_alive():
                p.kill()
            p.join(5)
        wall = time.monotonic() - start
        raw = [_read(outdir, r, "json") for r in range(world)]
        results = [json.loads(text) if text else {} for text in raw]
        logs = [_read(outdir, r, "log") for r in range(world)]
    per_phase = {n: [res.get(n) for res in results] for n, _, _ in phases}
    return Launch(per_phase, wall, killed, [p.exitcode for p in procs], logs, timeout_s, bound_s)


def investigate(timeout_s: float = TIMEOUT_S, bound_s: float = BOUND_S) -> Launch:
    """The lesson's run: the bug, monitored_barrier, TORCH_DISTRIBUTED_DEBUG=DETAIL, the fix."""
    return launch([("bug", SKIP_BUGGY, "OFF"), ("monitored_barrier", MONITORED, "OFF"),
                   ("DETAIL", SKIP_BUGGY, "DETAIL"), ("fix", SKIP_FIXED, "OFF")],
                  timeout_s, bound_s)


# --- reading the results ---------------------------------------------------------------------------

def classify(error: str | None) -> str:
    """A run-independent description of a worker's error."""
    if not error:
        return "finished"
    if "monitoredBarrier" in error:
        found = re.search(r"Ranks? ([\d, ]+) failed to pass monitoredBarrier", error)
        return f"monitored_barrier: rank(s) {found.group(1).strip() if found else '?'} never arrived"
    if "Detected mismatch between collectives" in error:
        found = re.search(r"Rank (\d+) is running collective: CollectiveFingerPrint\("
                          r"SequenceNumber=(\d+),?\s*OpType=(\w+)", error)
        if found:
            return (f"DETAIL: mismatch detected, this rank runs {found.group(3)} as collective "
                    f"#{found.group(2)}")
        return "DETAIL: mismatch detected"
    if "timed out" in error.lower() or "timeout" in error.lower():
        return "timed out"
    if "Connection closed by peer" in error:  # the peer's clock ran out first and it hung up:
        return "timed out"  # the same hang, ended by the other side's timeout (a loaded machine)
    return error.split(":")[0]


def stable_report(result: Launch) -> str:
    """Stable lines: each phase, each rank's completed all-reduces and how it ended."""
    lines = []
    for phase, ranks in result.phases.items():
        lines.append(f"{phase}:")
        for r, res in enumerate(ranks):
            if res is None:
                lines.append(f"  rank {r}: no result (the process ended early)")
                continue
            sums = res["values"].get("sums", [])
            lines.append(f"  rank {r}: all-reduced sums {sums}, then {classify(res['error'])}")
    lines.append(f"all workers ended within the {result.bound_s:.0f} s bound: {not result.killed}")
    return "\n".join(lines)


def raw_report(result: Launch) -> str:
    """Everything the workers said, times and native log lines included (varies run to run)."""
    lines = [f"wall time {result.wall_s:.1f} s, exit codes {result.exitcodes}, "
             f"killed at the bound: {result.killed}"]
    for phase, ranks in result.phases.items():
        for r, res in enumerate(ranks):
            if res is not None:
                lines.append(f"[{phase}] rank {r} after {res['seconds']:.2f} s: "
                             f"{res['error'] or 'ok'}"[:400])
    for r, log in enumerate(result.logs):
        for line in log.strip().splitlines():
            lines.append(f"[rank {r} log] {line}"[:300])
    return "\n".join(lines)


# --- the drill ------------------------------------------------------------------------------------

def _gloo_run(source: str, name: str) -> CodeRun:
    if not gloo_available():
        return CodeRun({"launch": None}, RuntimeError("torch.distributed with gloo is not available"))
    return CodeRun({"launch": launch([("run", source, "OFF")])}, None, (), source)


def _skip_measure(run: CodeRun) -> Symptom:
    result: Launch | None = run["launch"]
    if result is None:
        return Symptom(f"not run: {run.error_text}", False)
    ranks = result.phases["run"]
    ends = [classify(r["error"]) if r else "no result" for r in ranks]
    sums = [r["values"].get("sums", []) if r else [] for r in ranks]
    hung = result.killed or any(e != "finished" for e in ends)
    text = "; ".join(f"rank {i}: sums {s}, then {e}" for i, (s, e) in enumerate(zip(sums, ends,
                                                                                       strict=True)))
    if hung:
        text += f" (timeout={result.timeout_s:g} s; gloo's default would wait 30 minutes, NCCL's 10)"
    return Symptom(text, hung, {"ends": ends, "sums": sums, "wall_s": result.wall_s})


SKIP = Drill(
    id="distributed.rank_skips_batch",
    category="distributed",
    title="A rank that skips a batch: the others hang",
    buggy_code=SKIP_BUGGY,
    fixed_code=SKIP_FIXED,
    measure=_skip_measure,
    question=shuffled_question(
        "distributed.rank_skips_batch",
        "In DDP, rank 0 skips one batch with continue; the other ranks go on. What happens?",
        "The others hang in an all-reduce until the timeout",
        ("Rank 0 raises a clear error at its next step",
         "Nothing, as each rank averages its own gradients",
         "DDP notices and skips that batch on every rank"),
        "collectives match by call order, not by step; every rank must make the same calls in "
        "the same order"),
    hints=("Count the all_reduce calls on each rank.",
           "Every rank must call every collective: join with zeros, or filter the data before "
           "the DistributedSampler. Diagnose with monitored_barrier or "
           "TORCH_DISTRIBUTED_DEBUG=DETAIL."),
    explanation="Collectives are matched by the order in which each rank calls them. After rank "
                "0 skips step 2, its step-3 all-reduce pairs with the others' step 2 (the sums "
                "are silently wrong), and the others' last all-reduce has no partner: they wait "
                "until the process group's timeout (by default 10 minutes with NCCL, 30 with gloo), "
                "with no error in between. monitored_barrier (gloo) names the rank that did not arrive; "
                "TORCH_DISTRIBUTED_DEBUG=DETAIL checks every collective's type and shapes across "
                "ranks and reports the mismatch at once. Fix: every rank makes every call (join "
                "with a zero contribution) or filter before sharding.",
    source="R77, R78 in references.md (collectives match by call order; default timeouts; "
           "monitored_barrier, TORCH_DISTRIBUTED_DEBUG=DETAIL)",
    runner=_gloo_run,
    emulated="two CPU processes with gloo stand in for GPUs with NCCL; the pairing rules are the "
             "same",
    variants=(  # each keeps ``sums``: the workers report it by that name
        Variant("five steps, the second one dropped",
                {"grad": "update"},
                (("step == 2", "step == 1"), ("range(4)", "range(5)"))),
        Variant("batch sizes decide the skip",
                {"grad": "local"},
                (("sums = []", "sizes = [8, 8, 3, 8]\nsums = []"),
                 ("rank == 0 and step == 2", "rank == 0 and sizes[step] < 4"))),
        Variant("three steps, other values",
                {"grad": "contribution"},
                (("torch.tensor([float(step)])", "torch.tensor([0.5 * step + 1])"),
                 ("range(4)", "range(3)"))),
    ),
)

DRILLS = (SKIP,)
