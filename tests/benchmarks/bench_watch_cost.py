"""What ``course watch`` costs the user, end to end, on real public training scripts, and whether it
stays quiet on them: each script of ``public_scripts/`` (pytorch/examples, data swapped for synthetic
data of the same shape, see its MANIFEST.md) runs plain and under ``course watch``, alternating,
``--repeats`` times each, in fresh processes; the table gives the medians of the whole process's
wall time and their ratio. ``--side-by-side`` runs each pair at once instead, each process pinned
to its own core and the cores swapped each repeat: on a shared box whose speed drifts by more than
the budget over minutes, a slow phase then falls on both runs of a pair (scripts that start
processes of their own, like ``mnist_hogwild``, get one core each). The two cores of a shared box
can differ by more than the budget too: give ``--side-by-side`` an even ``--repeats``, so each side
runs as often on each core.

    python tests/benchmarks/bench_watch_cost.py [--only NAME ...] [--repeats 3] [--json PATH]
        [--path DIR] [--side-by-side] [--publish]

The budget, fixed before the runs: a watched run takes at most 1.10x its plain run, or at most
1 s more where the plain run is under 10 s. Quiet: the watcher reports nothing, notes included.
The scripts need torchvision (and gymnasium for the two reinforcement-learning ones): ``--path DIR``
puts a folder that holds them on the scripts' ``PYTHONPATH`` (both runs alike). Not part of the
test suite; ``--publish`` stores the rows in docs/figures/watch_cost.json and writes the table in
docs/watch.md (``tests/test_docs.py`` checks the two agree); ``--course DIR`` times another
checkout's ``course watch`` (a "before" figure).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CORPUS = HERE / "public_scripts"

# name, script, arguments (the script's own flags only), data prepared in the run folder
CASES = [
    ("mnist", "mnist/main.py", ["--epochs", "1"], None),
    ("vae", "vae/main.py", ["--epochs", "2"], None),
    ("time_sequence_prediction", "time_sequence_prediction/train.py", ["--steps", "2"], "sine"),
    ("word_language_model (LSTM)", "word_language_model/main.py", ["--epochs", "1"], "text"),
    ("word_language_model (Transformer)", "word_language_model/main.py",
     ["--epochs", "1", "--model", "Transformer", "--lr", "5"], "text"),
    ("dcgan", "dcgan/main.py",
     ["--dataset", "fake", "--niter", "1", "--workers", "0", "--ngf", "16", "--ndf", "16"], None),
    ("mnist_rnn", "mnist_rnn/main.py", ["--epochs", "1"], None),
    ("mnist_forward_forward", "mnist_forward_forward/main.py", ["--epochs", "100"], None),
    ("siamese_network", "siamese_network/main.py", ["--epochs", "1"], None),
    ("regression", "regression/main.py", [], None),
    ("gcn", "gcn/main.py", [], None),
    ("gat", "gat/main.py", ["--epochs", "30"], "cora"),
    ("super_resolution", "super_resolution/main.py",
     ["--upscale_factor", "3", "--nEpochs", "2", "--threads", "0"], "bsds"),
    ("mnist_hogwild", "mnist_hogwild/main.py", ["--epochs", "1", "--num-processes", "2"], None),
    ("reinforce", "reinforcement_learning/reinforce.py", [], None),
    ("actor_critic", "reinforcement_learning/actor_critic.py", [], None),
]


def prepare(kind: str | None, folder: Path, python: str, env: dict) -> None:
    """Write the case's synthetic data into its run folder (as its own scripts or loaders expect)."""
    (folder / "results").mkdir()  # where vae saves its samples (its README: make it first)
    if kind == "sine":  # the example's companion script, unmodified
        script = CORPUS / "time_sequence_prediction" / "generate_sine_wave.py"
        subprocess.run([python, str(script)], cwd=folder, env=env, check=True)
        return
    call = {"cora": "write_cora()", "text": "write_text_corpus()", "bsds": "write_bsds()"}.get(kind)
    if call:
        subprocess.run([python, "-c", f"import synthetic_data; synthetic_data.{call}"], cwd=folder,
                       env=env, check=True)


def command(python: str, case: tuple, folder: Path, watched: bool) -> list[str]:
    """The plain run's command line, or the same script under ``course watch``."""
    _, script, args, _ = case
    cmd = [python, str(CORPUS / script), *args]
    if watched:
        cmd = [python, "-m", "course_utils.cli", "watch", "--quiet", "--json", str(folder / "watch.json"),
               str(CORPUS / script), *args]
    return cmd


def run_once(python: str, case: tuple, folder: Path, env: dict, watched: bool, timeout: int) -> dict:
    """One fresh process; its wall time, exit code and (watched) the watcher's findings."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    done = subprocess.run(command(python, case, folder, watched), cwd=folder, env=env,
                          capture_output=True, text=True, timeout=timeout)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return outcome(folder, watched, {"wall": wall, "cpu": cpu, "rc": done.returncode}, done.stderr)


def run_pair(python: str, case: tuple, folders: dict, env: dict, cores: dict, timeout: int) -> dict:
    """Plain and watched at the same time, each pinned to its own core: a slow phase of a shared
    machine falls on both. Returns {watched: run} with each process's own wall and CPU time."""
    runs: dict = {}

    def wait(watched: bool) -> None:
        folder, start = folders[watched], time.perf_counter()
        err = open(folder / "stderr.txt", "w+")  # noqa: SIM115 - read back below
        proc = subprocess.Popen(command(python, case, folder, watched), cwd=folder, env=env,
                                stdout=subprocess.DEVNULL, stderr=err,
                                preexec_fn=lambda: os.sched_setaffinity(0, {cores[watched]}))
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        run = {"wall": time.perf_counter() - start, "cpu": usage.ru_utime + usage.ru_stime,
               "rc": proc.returncode, "core": cores[watched]}
        runs[watched] = outcome(folder, watched, run, err.read())
        err.close()

    threads = [threading.Thread(target=wait, args=(w,)) for w in (False, True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return runs


def outcome(folder: Path, watched: bool, out: dict, stderr: str) -> dict:
    """A run's record: its times and exit code, its stderr's end if it failed, and (watched) what
    the watcher reported."""
    report = folder / "watch.json"
    if out["rc"]:
        out["stderr"] = stderr[-2000:]
    if watched and report.exists():
        doc = json.loads(report.read_text())
        out["findings"] = [f"{f['severity']} {f['kind']} step {f['step']}" for f in doc["findings"]]
        out["steps"], out["deep_steps"] = doc["steps"], doc["deep_steps"]
    return out


def measure(case: tuple, python: str, paths: list[str], repeats: int, timeout: int,
            side_by_side: bool = False) -> dict:
    """Plain and watched runs of one case, alternating (plain first on even repeats), or side by
    side on two cores that swap each repeat."""
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
           "PYTHONPATH": os.pathsep.join([*paths[:1], str(CORPUS), str(CORPUS / "site"), *paths[1:]]),
           "MPLBACKEND": "Agg"}
    if case[3] == "sine":  # its data is a numpy array, which torch.load's default no longer loads
        env["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"
    folders = {w: Path(tempfile.mkdtemp(prefix="bench-watch-cost-")) for w in (False, True)}
    try:
        for folder in folders.values():
            prepare(case[3], folder, python, env)
        runs: dict[str, list] = {"plain": [], "watch": []}
        for i in range(repeats):
            if side_by_side:
                pair = run_pair(python, case, folders, env, {False: i % 2, True: 1 - i % 2}, timeout)
                runs["plain"].append(pair[False])
                runs["watch"].append(pair[True])
                continue
            for watched in ((False, True) if i % 2 == 0 else (True, False)):
                runs["watch" if watched else "plain"].append(
                    run_once(python, case, folders[False], env, watched, timeout))
    finally:
        for folder in folders.values():
            shutil.rmtree(folder, ignore_errors=True)
    return summarize(case[0], runs)


def summarize(name: str, runs: dict) -> dict:
    plain = statistics.median(r["wall"] for r in runs["plain"])
    watch = statistics.median(r["wall"] for r in runs["watch"])
    cpu = [statistics.median(r["cpu"] for r in runs[k]) for k in ("plain", "watch")]
    findings = sorted({f for r in runs["watch"] for f in r.get("findings", [])})
    failed = [r.get("stderr", "")[-300:] for r in runs["plain"] + runs["watch"] if r["rc"]]
    last = runs["watch"][-1]
    return {
        "name": name, "plain_s": round(plain, 2), "watch_s": round(watch, 2),
        "ratio": round(watch / plain, 3), "extra_s": round(watch - plain, 2),
        "cpu_plain_s": round(cpu[0], 2), "cpu_watch_s": round(cpu[1], 2),
        "cpu_ratio": round(cpu[1] / cpu[0], 3),
        "within_budget": watch <= 1.10 * plain or (plain < 10 and watch - plain <= 1.0),
        "findings": findings, "failed": failed, "runs": runs,
        "steps": last.get("steps"), "deep_steps": last.get("deep_steps"),
    }


COLUMNS = ["script", "plain (s)", "watched (s)", "ratio", "CPU ratio", "within budget", "findings"]


def rows_of(results: list[dict]) -> list[list]:
    """One row per case: the medians, both ratios, the budget verdict and what the watcher said."""
    rows = []
    for r in results:
        found = "; ".join(r["findings"]) or "none"
        if r["failed"]:
            found += " (a run failed)"
        rows.append([r["name"], r["plain_s"], r["watch_s"], r["ratio"], r["cpu_ratio"],
                     r["within_budget"], found])
    return rows


def render(rows: list[list]) -> str:
    """The markdown table of the rows (what docs/watch.md holds)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "| --- | ---: | ---: | ---: | ---: | --- | --- |"]
    for name, plain, watched, ratio, cpu_ratio, within, found in rows:
        lines.append(f"| {name} | {plain:.1f} | {watched:.1f} | {ratio:.2f}x | {cpu_ratio:.2f}x | "
                     f"{'yes' if within else 'NO'} | {found} |")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", nargs="*", default=[], help="these cases (a name, or its first word)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--timeout", type=int, default=1800, help="seconds per run")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--path", action="append", default=[], help="a folder put on the scripts' path")
    p.add_argument("--course", default=str(ROOT), help="the checkout whose course watch runs")
    p.add_argument("--json", help="write the results (every run's times) here")
    p.add_argument("--side-by-side", action="store_true",
                   help="run plain and watched at once, each on its own core (cores swap each repeat)")
    p.add_argument("--results", nargs="*", default=[],
                   help="no runs: the results of earlier --json files (runs split in parts; where two "
                        "hold a case, the later file's)")
    p.add_argument("--publish", action="store_true",
                   help="write the rows to docs/figures/watch_cost.json and the table in docs/watch.md")
    a = p.parse_args()
    earlier = [json.loads(Path(f).read_text()) for f in a.results]
    latest = {r["name"]: r for doc in earlier for r in doc["results"]}  # a later file's case wins
    results = [latest[c[0]] for c in CASES if c[0] in latest]
    for case in [] if a.results else CASES:
        if a.only and not any(case[0] == o or case[0].startswith(o + " ") for o in a.only):
            continue
        results.append(measure(case, a.python, [a.course, *a.path], a.repeats, a.timeout,
                               a.side_by_side))
        r = results[-1]
        if a.json:  # after each case: a long run stopped midway keeps what it measured
            Path(a.json).write_text(json.dumps({"load": os.getloadavg(), "results": results}, indent=1))
        print(f"{r['name']}: {r['plain_s']:.1f} s -> {r['watch_s']:.1f} s ({r['ratio']:.2f}x)"
              f" {r['findings'] or ''} {'FAILED' if r['failed'] else ''}", file=sys.stderr, flush=True)
    print(render(rows_of(results)))
    load = os.getloadavg()
    print(f"\nload average at the end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} ({os.cpu_count()} cores)")
    if a.json and not a.results:
        Path(a.json).write_text(json.dumps({"load": load, "results": results}, indent=1))
    if a.publish:
        sys.path.insert(0, str(ROOT))
        from tests.benchmarks.doc_tables import publish

        runs_load = max((doc["load"][0] for doc in earlier), default=load[0])  # the runs', not now's
        rows = rows_of(results)
        print(f"written: {publish('watch_cost', 'watch.md', rows, render(rows), runs_load)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
