"""How many learners one machine serves on JupyterHub for docs/instructors.md.

    .venv/bin/python tests/benchmarks/bench_hub.py [--users 3 6 10] [--markdown] [--publish]

``--publish`` writes the rows to docs/figures/hub_capacity.json and the table in docs/instructors.md.

Not part of the test suite. For each class size N, a fresh hub (tests/hub_session.py: `course
hub-config`'s plain configuration on loopback) starts N learners' servers at once through the REST
API, as a class logging in together; then each learner opens a kernel and runs a lesson-01 check()
twice, all learners at once: the first check imports torch and the course (a cold kernel), the
second is what every later check costs. Figures per N:

- server start: REST request to ``ready``, median and slowest of the N;
- check: wall time from sending the code to the reply, slowest learner, cold and warm;
- memory per learner: RSS of the learner's server + kernel after the checks (PSS, which counts
  shared pages once, in brackets), and the drop of MemAvailable over the run divided by N (printed,
  not in the table: on a machine others use it is noise);
- CPU per learner: seconds the server used to start (launcher included) and its kernel used up to
  the end of its first check. Unlike the wall times, these do not depend on what else the machine
  runs: N learners arriving together need about N x (both) / cores seconds of the whole machine.

Needs jupyterhub and configurable-http-proxy (the README's test command installs both).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.hub_session import Hub, Kernel, find_proxy  # noqa: E402

CHECK = ("import math\nfrom course_utils import check\n"
         "def batch_bytes(shape, dtype):\n    return math.prod(shape) * dtype.itemsize\n"
         "check('01.batch_bytes', batch_bytes)\nimport os\nprint(os.getpid())")


def meminfo(key: str = "MemAvailable") -> int:
    """A /proc/meminfo figure in bytes."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def process_memory(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of a process in bytes."""
    rss = pss = 0
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Rss:"):
            rss = int(line.split()[1]) * 1024
        elif line.startswith("Pss:"):
            pss = int(line.split()[1]) * 1024
    return rss, pss


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def learner(hub: Hub, name: str) -> dict:
    kernel = Kernel(hub, name, hub.user_token(name))
    try:
        times, pid, cpu = [], 0, []
        for _ in range(2):
            start = time.monotonic()
            got = kernel.execute(CHECK, deadline_s=600)
            times.append(time.monotonic() - start)
            if got["status"] != "ok":
                raise RuntimeError(f"{name}'s check failed: {got}")
            pid = int(got["stdout"].split()[-1])
            if not cpu:
                cpu.append(cpu_seconds(pid))
        server_pid = hub.server(name)["state"]["pid"]
        memory = [process_memory(p) for p in (server_pid, pid)]
        return {"cold": times[0], "warm": times[1], "kernel_cpu": cpu[0], "rss": sum(m[0] for m in memory),
                "pss": sum(m[1] for m in memory)}
    finally:
        kernel.close()


def measure(n: int, proxy: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-hub-") as folder:
        before = meminfo()
        hub = Hub(Path(folder), proxy)
        try:
            hub.start()
            names = [f"learner{i:02d}" for i in range(n)]
            hub.add_users(names)
            asked = {}
            for name in names:
                asked[name] = time.monotonic()
                hub.start_server(name)
            started = {}
            with ThreadPoolExecutor(n) as pool:
                ready = pool.map(lambda nm: (nm, hub.wait_ready(nm), time.monotonic()), names)
                for name, _, at in ready:
                    started[name] = at - asked[name]
            server_cpu = [cpu_seconds(hub.server(nm)["state"]["pid"]) for nm in names]
            with ThreadPoolExecutor(n) as pool:
                runs = list(pool.map(lambda nm: learner(hub, nm), names))
            used = before - meminfo()
            proxy_pid = int((Path(folder) / "proxy.pid").read_text())
            hub_rss = sum(process_memory(p)[0] for p in (hub.process.pid, proxy_pid))
        finally:
            hub.stop()
    starts = sorted(started.values())
    return {"users": n, "start_median": statistics.median(starts), "start_max": starts[-1],
            "cold_max": max(r["cold"] for r in runs), "warm_max": max(r["warm"] for r in runs),
            "rss": statistics.median(r["rss"] for r in runs),
            "pss": statistics.median(r["pss"] for r in runs), "available_drop": used / n,
            "server_cpu": statistics.median(server_cpu), "hub_rss": hub_rss,
            "kernel_cpu": statistics.median(r["kernel_cpu"] for r in runs)}


def render(rows: list[dict]) -> str:
    """The capacity table in Markdown, one row per class size."""
    mib = 2**20
    lines = ["| arriving at once | server start, median / slowest | first check (imports torch), "
             "slowest | later check, slowest | memory per learner: RSS (PSS) | "
             "CPU per learner: server start + kernel's first check |", "|---|---|---|---|---|---|"]
    lines += [f"| {r['users']} learners | {r['start_median']:.1f} s / {r['start_max']:.1f} s | "
              f"{r['cold_max']:.1f} s | {r['warm_max']:.2f} s | {r['rss'] / mib:.0f} MB "
              f"({r['pss'] / mib:.0f} MB) | {r['server_cpu']:.1f} s + {r['kernel_cpu']:.1f} s |"
              for r in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, nargs="+", default=[3, 6, 10])
    parser.add_argument("--markdown", action="store_true", help="print the capacity table")
    parser.add_argument("--publish", action="store_true",
                        help="write the table into docs/instructors.md (and its figures)")
    args = parser.parse_args()
    proxy = find_proxy()
    if proxy is None:
        sys.exit("configurable-http-proxy not found: "
                 "npm install --prefix build/node configurable-http-proxy@5")
    mib = 2**20
    print(f"machine: {os.cpu_count()} CPUs, {meminfo('MemTotal') / 2**30:.1f} GiB; "
          f"load average at start {os.getloadavg()[0]:.1f}", flush=True)
    rows = []
    for n in args.users:
        row = measure(n, proxy)
        rows.append(row)
        print(f"{n:>3} learners: server start median {row['start_median']:.1f} s, slowest "
              f"{row['start_max']:.1f} s; check cold {row['cold_max']:.1f} s, warm {row['warm_max']:.2f} s "
              f"(slowest learner); memory per learner {row['rss'] / mib:.0f} MB RSS "
              f"({row['pss'] / mib:.0f} MB PSS), MemAvailable drop {row['available_drop'] / mib:.0f} MB; "
              f"CPU per learner: server start {row['server_cpu']:.1f} s, kernel to its first check "
              f"{row['kernel_cpu']:.1f} s; hub + proxy {row['hub_rss'] / mib:.0f} MB RSS; "
              f"load average {os.getloadavg()[0]:.1f}", flush=True)
    if args.markdown:
        print("\n" + render(rows))
    if args.publish:
        from tests.benchmarks.doc_tables import publish
        print(f"wrote {publish('hub_capacity', 'instructors.md', rows, render(rows))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
