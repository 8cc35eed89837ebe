"""The worker of lesson 07's distributed drill: one process per rank, started by ``mp.spawn``.

Workers started with the "spawn" method must be importable, so they live in this module, not in
a notebook. ``main`` joins a TCPStore on 127.0.0.1 and runs *phases*: each phase creates a gloo
process group (always with ``timeout=``: gloo's default is 30 minutes), executes the phase's code
with ``rank``, ``world``, ``dist``, ``torch`` and ``timeout`` defined, records the error and the
numbers the code left, and destroys the group. Results go to ``rank<r>.json`` after every phase
and the process's native output (gloo's log lines) to ``rank<r>.log``, so nothing reaches the
notebook that started it. ``course_utils.drills.distributed`` starts and bounds the workers.
"""

from __future__ import annotations

import datetime
import json
import os
import time

import torch
import torch.distributed as dist

GIVEN = ("rank", "world", "dist", "torch", "timeout")


def _redirect_output(path: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _sync(store, key: str, world: int, deadline: float) -> None:
    """Wait until every rank has added itself to ``key`` (a barrier on the store, not gloo)."""
    store.add(key, 1)
    while store.add(key, 0) < world:
        if time.monotonic() > deadline:
            raise TimeoutError(f"not every rank reached {key}")
        time.sleep(0.005)


def _plain(value):
    """JSON-able numbers and lists of numbers; None for anything else."""
    if isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple) and all(isinstance(v, int | float) for v in value):
        return list(value)
    return None


def _set_debug(level: str) -> None:
    os.environ["TORCH_DISTRIBUTED_DEBUG"] = level
    dist.set_debug_level_from_env()


def _run_phase(phase: dict, rank: int, world: int, store, timeout_s: float) -> dict:
    _set_debug(phase.get("debug", "OFF"))
    timeout = datetime.timedelta(seconds=timeout_s)
    namespace = {"rank": rank, "world": world, "dist": dist, "torch": torch, "timeout": timeout}
    start, error = time.monotonic(), None
    try:
        dist.init_process_group("gloo", store=dist.PrefixStore(phase["name"], store), rank=rank,
                                world_size=world, timeout=timeout)
        exec(compile(phase["code"], f"<rank {rank}: {phase['name']}>", "exec"), namespace)  # noqa: S102
    except Exception as err:  # noqa: BLE001 - the error is what the drill measures
        error = f"{type(err).__name__}: {err}"
    seconds = time.monotonic() - start
    values = {k: _plain(v) for k, v in namespace.items()
              if k not in GIVEN and not k.startswith("_") and _plain(v) is not None}
    return {"error": error, "seconds": round(seconds, 3), "values": values}


def main(rank: int, world: int, port: int, phases: list[dict], outdir: str, timeout_s: float,
         rendezvous_s: float) -> None:
    """Run every phase on this rank; see the module docstring."""
    _redirect_output(os.path.join(outdir, f"rank{rank}.log"))
    deadline = time.monotonic() + rendezvous_s
    store = dist.TCPStore("127.0.0.1", port, world, is_master=rank == 0,
                          timeout=datetime.timedelta(seconds=rendezvous_s))
    results: dict[str, dict] = {}
    for phase in phases:
        _sync(store, f"{phase['name']}/start", world, deadline + timeout_s * 4)
        results[phase["name"]] = _run_phase(phase, rank, world, store, timeout_s)
        # every rank has raised (or finished) before any rank closes its connections
        _sync(store, f"{phase['name']}/end", world, time.monotonic() + timeout_s * 4)
        try:
            dist.destroy_process_group()
        except Exception:  # noqa: BLE001 - a group broken by a timeout may refuse; move on
            pass
        deadline = time.monotonic() + rendezvous_s
        path = os.path.join(outdir, f"rank{rank}.json")
        with open(path + ".tmp", "w", encoding="utf-8") as fh:
            json.dump(results, fh)
        os.replace(path + ".tmp", path)
    # Results are on disk. Leave at once: an orderly shutdown of torch's store and gloo threads
    # takes about a second more per process and has nothing left to do. The master serves the
    # store, so it leaves last, once every other rank has said goodbye.
    store.add("left", 1)
    if rank == 0:
        deadline = time.monotonic() + rendezvous_s
        while store.add("left", 0) < world and time.monotonic() < deadline:
            time.sleep(0.005)
    os._exit(0)
