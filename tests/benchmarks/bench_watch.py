"""``course watch`` against torcheck, cockpit and ``torch.autograd.detect_anomaly`` on real training
bugs: detection, false alarms, glue and overhead, side by side.

    build/bench-venv/bin/python tests/benchmarks/bench_watch.py [--jobs 2] [--only NAME ...] [--publish]
        [--busy N]

Not part of the test suite. The peers live in their own environment, torch pinned (README,
"course watch"); without it only ``course watch`` runs. Every script in ``watch_scripts/`` has a bug
(``NAME_bug.py``, its docstring says ``expect: kinds``) and a fixed version (``NAME_fixed.py``). Each
tool runs each script in a fresh process, attached as its documentation says (``watch_peers.py``).

Verdict rule, fixed before the runs:

- **detected**: the tool's output contains a signal that names one of the bug's expected kinds;
- **partly**: it reports something on the buggy script, but nothing that names the bug's kind
  (for ``course watch``: only notes, or other kinds);
- **missed**: it reports nothing (a tool that cannot attach, or breaks the script, reports nothing);
- **false alarm**: any report on a fixed script (for ``course watch``: any finding that is not a
  note; notes are information by design, e.g. "update below float resolution").

What names which kind (``SIGNALS``): ``course watch`` findings name their kind; torcheck's "should
change" names every kind where a parameter does not move (not in optimizer, stale optimizer, no
gradient, frozen, zero grad at step, flat loss), "contains NaN/inf" names non-finite, "doesn't
belong to any optimizer" names not in optimizer; detect_anomaly's "returned nan values" names
non-finite; cockpit's instruments, read as its documentation reads them (``cockpit_signals``):
non-finite loss/gradient norm, a gradient norm growing tenfold (growing grads, missing zero_grad),
update size 0 with a gradient (the "does not move" kinds), a loss that does not move (flat loss,
zero grad at step), update size shrinking a thousandfold (lr collapse, update ratio), alpha > 1
(update ratio). Glue lines: the non-blank, non-comment lines of a tool's ``glue_*`` function and the
helpers it uses; ``course watch`` needs none (``course watch script.py``). Overhead: one process,
blocks of steps alternating plain / with the tool on two identical copies of a small MLP and a
small CNN, timed in this thread's CPU time; the ratio of the medians.

A run's result is kept in ``build/bench-watch/cache`` under a hash of what it depends on (the
script, ``watch_peers.py``, torch's version, for ``course watch`` the toolkit's code) and reused
while that is unchanged; ``--fresh`` reruns everything. The jobs share the cores: each run gets the
cores divided among the jobs as its threads (``OMP_NUM_THREADS``, part of the hash), as a script run
alone has them all. Two jobs of two threads each on two cores spin waiting for each other: a script
took up to twenty times its CPU time, and the watcher's budget, a share of that time, with it.
``--busy N`` runs N CPU hogs beside the scripts (bootstrap's, as in ``bootstrap.py test --busy``):
detection on a busy box, never cached nor published. ``--publish`` keeps course watch's rows as each
pair's latest result and writes the table of all batches in docs/watch.md (``watch_batches``).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SCRIPTS = HERE / "watch_scripts"
OUT = ROOT / "build" / "bench-watch"
TOOLS = ("watch", "torcheck", "cockpit", "anomaly")
MOVES = {"not in optimizer", "stale optimizer", "no gradient", "frozen", "zero grad at step", "flat loss"}
SIGNALS = {  # (tool, what its output says) -> the kinds it names
    ("torcheck", "should change"): MOVES,
    ("torcheck", "contains"): {"non-finite"},
    ("torcheck", "belong to any optimizer"): {"not in optimizer"},
    ("anomaly", "nan values"): {"non-finite"},
    ("cockpit", "non-finite"): {"non-finite"},
    ("cockpit", "growing grads"): {"growing grads", "missing zero_grad"},
    ("cockpit", "no update"): MOVES,
    ("cockpit", "flat loss"): {"flat loss", "zero grad at step"},
    ("cockpit", "update shrinks"): {"lr collapse", "update ratio"},
    ("cockpit", "overshooting"): {"update ratio"},
}
GLUE = {
    "watch": [],
    "torcheck": ["glue_torcheck", "roots_holding", "after_optimizer_init"],
    "anomaly": ["glue_anomaly"],
    "cockpit": ["glue_cockpit", "after_optimizer_init", "cockpit_signals", "_series", "_total"],
}


def scripts(only: list[str]) -> list[tuple[str, set[str]]]:
    out = []
    for bug in sorted(SCRIPTS.glob("*_bug.py")):
        name = bug.name[: -len("_bug.py")]
        if only and not any(o in name for o in only):
            continue
        expect = re.search(r"^expect: (.*)$", bug.read_text(encoding="utf-8"), re.M).group(1)
        out.append((name, {k.strip() for k in expect.split(",")}))
    return out


def kinds_named(tool: str, result: dict) -> tuple[set[str], bool]:
    """(the kinds the tool's output names, whether it reported anything at all)."""
    if tool == "watch":
        alarms = [s for s in result["signals"] if s[1] != "info"]
        return {s[0] for s in alarms}, bool(result["signals"])
    named = set()
    for signal in result["signals"]:
        text = " ".join(signal)
        for (owner, phrase), kinds in SIGNALS.items():
            if owner == tool and phrase in text:
                named |= kinds
    return named, bool(result["signals"])


def _fingerprint(tool: str, script: Path, threads: int) -> str:
    """What a run's result depends on: the script, the glue, torch and its threads, and for course
    watch its code."""
    import hashlib

    import torch

    toolkit = sorted((ROOT / "course_utils" / "toolkit").rglob("*.py")) if tool == "watch" else []
    digest = hashlib.sha256(f"{torch.__version__} threads={threads}".encode())
    for path in [script, HERE / "watch_peers.py", *toolkit]:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def run_one(tool: str, name: str, version: str, timeout: int, fresh: bool = False, threads: int = 1) -> dict:
    """One tool on one script in a fresh process; a result whose inputs are unchanged is reused
    from ``build/bench-watch/cache`` (``--fresh``: never)."""
    script = SCRIPTS / f"{name}_{version}.py"
    cached = OUT / "cache" / f"{tool}-{name}-{version}-{_fingerprint(tool, script, threads)}.json"
    if cached.exists() and not fresh:
        return json.loads(cached.read_text(encoding="utf-8"))
    result = _run_fresh(tool, script, OUT / f"{tool}-{name}-{version}.json", timeout, threads)
    if not result.get("error"):
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(result), encoding="utf-8")
    return result


def _run_fresh(tool: str, script: Path, out: Path, timeout: int, threads: int) -> dict:
    OUT.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, str(HERE / "watch_peers.py"), tool, str(out), str(script)]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)
        missing = {"error": done.stderr[-300:], "signals": []}
        result = json.loads(out.read_text(encoding="utf-8")) if out.exists() else missing
    except subprocess.TimeoutExpired:
        result = {"error": "timeout", "signals": []}
    out.unlink(missing_ok=True)
    return result


def verdicts(tools, cases, jobs: int, timeout: int, fresh: bool = False) -> dict:
    runs = [(t, n, v) for t in tools for n, _ in cases for v in ("bug", "fixed")]
    threads = max(1, (os.cpu_count() or 1) // max(1, jobs))
    with ThreadPoolExecutor(jobs) as pool:
        results = dict(zip(runs, pool.map(lambda r: run_one(*r, timeout, fresh, threads), runs), strict=True))
    table = {}
    for tool in tools:
        rows = []
        for name, expect in cases:
            named, said = kinds_named(tool, results[(tool, name, "bug")])
            verdict = "detected" if named & expect else "partly" if said else "missed"
            fixed_named, fixed_said = kinds_named(tool, results[(tool, name, "fixed")])
            false_alarm = bool(fixed_named) if tool == "watch" else fixed_said
            rows.append({
                "script": name, "expect": sorted(expect), "verdict": verdict, "false_alarm": false_alarm,
                "named": sorted(named), "error": results[(tool, name, "bug")].get("error"),
                "fixed_signals": results[(tool, name, "fixed")]["signals"] if false_alarm else [],
            })
        table[tool] = rows
    return table


def glue_lines(tool: str) -> int:
    tree = ast.parse((HERE / "watch_peers.py").read_text(encoding="utf-8"))
    lines = (HERE / "watch_peers.py").read_text(encoding="utf-8").splitlines()
    total = 0
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in GLUE[tool]:
            body = node.body[1:] if isinstance(node.body[0], ast.Expr) else node.body  # no docstring
            for i in range(body[0].lineno, node.end_lineno + 1):
                text = lines[i - 1].strip()
                total += bool(text) and not text.startswith("#")
    return total


# --- overhead --------------------------------------------------------------------------------------------


def _models(kind: str):
    import torch
    from torch import nn

    torch.manual_seed(0)
    if kind == "MLP":
        model = nn.Sequential(
            nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10)
        )
        x, y = torch.randn(64, 32), torch.randint(0, 10, (64,))
        return model, torch.optim.Adam(model.parameters(), lr=1e-3), x, y
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(32 * 8 * 8, 10),
    )
    x, y = torch.randn(32, 3, 16, 16), torch.randint(0, 10, (32,))
    return model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9), x, y


def overhead(tool: str, kind: str, blocks: int = 30, block: int = 20) -> float:
    """Median CPU time of a block of steps with the tool / without, blocks alternating."""
    import torch
    from torch import nn

    torch.set_num_threads(1)
    plain, plain_opt, x, y = _models(kind)
    watched, opt, _, _ = _models(kind)
    loss_fn = nn.CrossEntropyLoss()
    on, off, backward = (lambda: None), (lambda: None), (lambda loss, step: loss.backward())
    if tool == "watch":
        from course_utils.toolkit.watch.watcher import Watcher

        watcher = Watcher(verbose=False).install()
        on, off = watcher.resume, watcher.pause
    elif tool == "anomaly":
        on, off = (
            (lambda: torch.autograd.set_detect_anomaly(True)),
            (lambda: torch.autograd.set_detect_anomaly(False)),
        )
    elif tool == "torcheck":
        import torcheck

        torcheck.register(opt)
        torcheck.add_module_changing_check(watched, module_name="model")
        torcheck.add_module_nan_check(watched, module_name="model")
        torcheck.add_module_inf_check(watched, module_name="model")
    elif tool == "cockpit":
        from backpack import extend
        from cockpit import Cockpit
        from cockpit.utils.configuration import configuration

        watched, loss_tool = extend(watched), extend(nn.CrossEntropyLoss())
        per_sample = nn.CrossEntropyLoss(reduction="none")
        cockpit = Cockpit(watched.parameters(), quantities=configuration("economy"))

        def backward(loss, step, out=None):
            info = {
                "batch_size": len(x),
                "individual_losses": per_sample(backward.out, y),
                "loss": loss,
                "optimizer": opt,
            }
            with cockpit(step, info=info):
                loss.backward(create_graph=cockpit.create_graph(step))

    def run(model, optimizer, tool_on: bool, start: int) -> float:
        began = time.thread_time()
        for i in range(block):
            optimizer.zero_grad()
            out = model(x)
            if tool_on and tool == "cockpit":
                backward.out = out
                backward(loss_tool(out, y), start + i)
            else:
                loss_fn(out, y).backward()
            optimizer.step()
        return time.thread_time() - began

    times: dict[bool, list[float]] = {True: [], False: []}
    off()
    run(plain, plain_opt, False, 0)
    on()
    run(watched, opt, True, 0)  # the tool's dense start
    step = block
    for i in range(blocks):
        for tool_on in (True, False) if i % 2 else (False, True):
            (on if tool_on else off)()
            times[tool_on].append(
                run(watched if tool_on else plain, opt if tool_on else plain_opt, tool_on, step)
            )
            step += block if tool_on else 0
    off()
    if tool == "watch":
        watcher.uninstall()
    return statistics.median(times[True]) / statistics.median(times[False])


def overhead_in_process(tool: str, kind: str) -> str:
    """Each tool in its own process, so no tool's global state touches another's numbers."""
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); sys.path.insert(0, {str(HERE)!r}); "
        f"import bench_watch; print(bench_watch.overhead({tool!r}, {kind!r}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=1200
    )
    lines = done.stdout.strip().splitlines()
    return f"{float(lines[-1]):.2f}x" if done.returncode == 0 and lines else "failed"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=[], help="scripts whose name contains one of these")
    parser.add_argument("--tools", nargs="*", default=list(TOOLS))
    parser.add_argument("--timeout", type=int, default=900, help="seconds per run")
    parser.add_argument("--no-overhead", action="store_true")
    parser.add_argument("--fresh", action="store_true", help="rerun every script (no cached results)")
    parser.add_argument("--publish", action="store_true", help="record the rows, write docs/watch.md's table")
    parser.add_argument("--busy", type=int, default=0, metavar="N",
                        help="run N CPU hogs beside the scripts (a busy box; every script reruns)")
    args = parser.parse_args()
    if args.busy and args.publish:
        parser.error("--busy measures a busy box: its rows are not published")
    tools = [t for t in args.tools if t == "watch" or _installed(t)]
    cases = scripts(args.only)
    from course_utils.bootstrap import cpu_hogs

    with cpu_hogs(args.busy):
        table = verdicts(tools, cases, args.jobs, args.timeout, args.fresh or args.busy > 0)
    print(f"{'script':<26}" + "".join(f"{t:<22}" for t in tools))
    for i, (name, _) in enumerate(cases):
        cells = [f"{table[t][i]['verdict']}{' +FA' if table[t][i]['false_alarm'] else ''}" for t in tools]
        print(f"{name:<26}" + "".join(f"{c:<22}" for c in cells))
    summary = {}
    head = ("tool", "detected", "partly", "missed", "false alarms (fixed)", "glue lines", "overhead MLP",
            "overhead CNN")
    print("\n| " + " | ".join(head) + " |")
    print("|---|---|---|---|---|---|---|---|")
    for tool in tools:
        rows = table[tool]
        count = {v: sum(r["verdict"] == v for r in rows) for v in ("detected", "partly", "missed")}
        alarms = sum(r["false_alarm"] for r in rows)
        ratios = ["-", "-"] if args.no_overhead else [overhead_in_process(tool, k) for k in ("MLP", "CNN")]
        label = "course watch" if tool == "watch" else tool
        print(
            f"| {label} | {count['detected']}/{len(rows)} | {count['partly']} | {count['missed']} | "
            f"{alarms}/{len(rows)} | {glue_lines(tool)} | {ratios[0]} | {ratios[1]} |"
        )
        summary[tool] = {**count, "false_alarms": alarms, "scripts": len(rows), "glue": glue_lines(tool),
                         "overhead": ratios, "rows": rows}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "summary.json").write_text(json.dumps(summary, indent=1, default=str), encoding="utf-8")
    if args.publish and "watch" in summary:
        print(f"written: {__import__('watch_batches').publish(summary['watch']['rows'])}")
    watch = summary.get("watch")  # the exit code judges course watch (a peers-only run: 0)
    return 0 if not watch or watch["detected"] >= 0.9 * watch["scripts"] and not watch["false_alarms"] else 1


def _installed(tool: str) -> bool:
    module = {"torcheck": "torcheck", "cockpit": "cockpit", "anomaly": "torch"}[tool]
    import importlib.util

    found = importlib.util.find_spec(module) is not None
    if not found:
        print(f"({tool} is not installed in this environment: skipped; see the README to install the peers)")
    return found


if __name__ == "__main__":
    sys.exit(main())
