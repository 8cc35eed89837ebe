"""Run one submission in a fresh, limited process and collect what it reported (``course grade``).

Process tree per submission: grader -> supervisor (``supervise.py``, a subreaper in its own
session) -> the submission (``runner.py``, in a new session, with resource limits). The grader is
never the submission's parent, so a submission that kills its parent or its process group kills
only the supervisor or itself; the grader then treats that submission as an error and sweeps what
is left: the submission's session and group, every process carrying its environment token, and,
when the grader was made a subreaper (``course grade`` does this, for the run only), every orphan
it adopted during the run.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from course_utils.grader import isolation, procs
from course_utils.grader.address_space import gpu_library_bytes
from course_utils.grader.fair_clock import latest_end
from course_utils.grader.results import read_results, read_results_fd  # noqa: F401 - read_results re-exported
from course_utils.grader.tidy import remove_tree

SUPERVISOR = Path(__file__).with_name("supervise.py")
TOKEN_VAR = "MPS_DETECTIVE_GRADING"
MIN_MEMORY_MB = 768  # measured: torch + course_utils + matplotlib need ~700 MB of address space
GRACE_S = 15.0  # beyond --timeout, for the supervisor's own start and clean-up
HALT_S = 10.0  # after Ctrl-C: the most a supervisor gets to stop its submission and clean up


@dataclass(frozen=True)
class Limits:
    """Per-submission limits (see ``course grade --help``)."""

    timeout: float = 60.0  # seconds for the whole submission: wall time less CPU queueing (fair_clock)
    memory_mb: int = 2048  # address space (RLIMIT_AS); importing torch needs about 700 MB
    output_cap: int = 20_000  # bytes of stdout and of stderr kept
    result_cap: int = 64 * 2**20  # bytes of results read back (also the file-size limit)

    @property
    def step_timeout(self) -> float:
        """A cell, or one exercise's calls, may take at most a quarter of the wall-clock limit."""
        return max(1.0, self.timeout / 4)


@dataclass
class RunStatus:
    """What came back from one submission's process."""

    records: list[dict] = field(default_factory=list)
    returncode: int | None = None
    timed_out: bool = False
    supervisor_died: bool = False
    problem: str | None = None
    stdout: str = ""
    stderr: str = ""
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    wall_s: float = 0.0
    swept: int = 0
    isolation: str = ""

    def exit_text(self) -> str:
        """How the process ended, in words ("exit code 3", "killed by SIGKILL")."""
        rc = self.returncode
        if rc is None:
            return "unknown"
        if rc < 0:
            try:
                return f"killed by {signal.Signals(-rc).name}"
            except ValueError:
                return f"killed by signal {-rc}"
        return f"exit code {rc}"


def course_paths() -> tuple[str, list[str]]:
    """(the folder holding course_utils, the folders a submission may not read)."""
    from course_utils.core.errors import course_root

    package = Path(__file__).resolve().parents[1]  # course_utils/grader/sandbox.py
    blocked = [package / "bank", course_root() / "solutions"]
    return str(package.parent), [str(p) for p in blocked if p.is_dir()]


def _json_lines(raw: bytes) -> list[dict]:
    out = []
    for line in raw.decode("utf-8", "replace").splitlines()[:100]:
        try:
            item = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(item, dict):
            out.append(item)
    return out


def _status(final: dict, cap: int) -> RunStatus:
    """The supervisor's report, with every field checked (nothing is taken on trust)."""
    def num(key, kind=int):
        value = final.get(key)
        return value if type(value) in (int, kind) and not isinstance(value, bool) else 0

    rc = final.get("returncode")
    return RunStatus(returncode=rc if type(rc) is int else None, timed_out=final.get("timed_out") is True,
                     stdout=str(final.get("stdout", ""))[:cap], stderr=str(final.get("stderr", ""))[:cap],
                     stdout_bytes=num("stdout_bytes"), stderr_bytes=num("stderr_bytes"),
                     wall_s=num("wall_s", float), swept=num("swept"))


def _unnamed_file(folder: Path) -> int:
    """A results file with no name (``O_TMPFILE``, else created and unlinked at once): only the
    descriptor the grader hands to this submission's process leads to it, so no other process (a
    submission of another run sharing ``TMPDIR`` above all) can find it, let alone append to it."""
    flags = os.O_RDWR | os.O_CLOEXEC
    try:
        return os.open(folder, flags | os.O_TMPFILE, 0o600)
    except (AttributeError, OSError):
        path = folder / f"results-{secrets.token_hex(16)}"
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o600)
        path.unlink()
        return fd


class Sandbox:
    """Starts supervisors for one grading run and cleans up after every one of them."""

    def __init__(self, limits: Limits, reap_orphans: bool = False, isolate: str = "guards",
                 class_roots: list[str] | tuple[str, ...] = (), private: list[str] | tuple[str, ...] = ()):
        self.limits, self.reap_orphans = limits, reap_orphans
        self.run_token = secrets.token_hex(8)
        # one folder per run: the bank-less copy of the package, then one folder per submission
        self.run_dir = Path(tempfile.mkdtemp(prefix="course-grade-"))
        self.root = str(isolation.copy_package(self.run_dir))
        try:
            self.isolation = isolation.choose(isolate, list(class_roots), self.run_dir, private)
        except BaseException:
            shutil.rmtree(self.run_dir, ignore_errors=True)
            raise
        self.blocked = self.isolation.blocked
        self.live: set[int] = set()
        self.stopping = False  # set by interrupt(): no supervisor starts after it
        self.lock = threading.Lock()
        self.count = 0
        me = os.getpid()
        self.preexisting = {p.pid for p in procs.snapshot().values() if p.ppid == me}
        if reap_orphans:
            self.reap_orphans = procs.become_subreaper()

    def _env(self, workdir: Path, token: str) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", os.defpath), "HOME": str(workdir),
            "TMPDIR": str(workdir / "tmp"), "LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8",
            "PYTHONPATH": self.root, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0",
            "PYTHONUNBUFFERED": "1", "PYTHONSAFEPATH": "1", "PYTHONNOUSERSITE": "1",
            "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
            "MALLOC_ARENA_MAX": "2", "MPLBACKEND": "Agg", "MPLCONFIGDIR": str(workdir / "tmp"),
            "MPS_DETECTIVE_DEVICE": "cpu", "MPS_DETECTIVE_HOME": str(workdir / "tmp"),
            TOKEN_VAR: token,
        }

    def _spec(self, workdir: Path, token: str) -> dict:
        lim = self.limits
        jail = workdir.parent / f"{workdir.name}.jail.json"
        cmd = self.isolation.wrap(jail, [sys.executable, "-m", "course_utils.grader.runner", str(workdir)],
                                  [self.root], str(workdir))
        return {"cmd": cmd,
                "cwd": str(workdir), "env": self._env(workdir, token), "timeout": lim.timeout,
                # --memory is sized for a CPU torch; a CUDA torch's GPU libraries get room on top
                "memory_bytes": lim.memory_mb * 2**20 + gpu_library_bytes() if lim.memory_mb else None,
                "cpu_seconds": int(lim.timeout) + 2, "fsize_bytes": lim.result_cap,
                "output_cap": lim.output_cap, "token": f"{TOKEN_VAR}={token}"}

    def run(self, cells: list[str], exercises: list[dict], cases_blob: bytes) -> RunStatus:
        """Run a submission's ``cells`` and call its answers on the pickled cases."""
        with self.lock:
            self.count += 1
            number = self.count
            token = f"{self.run_token}.{number}"
        workdir = self.run_dir / f"submission-{number}"
        results = -1
        try:
            (workdir / "tmp").mkdir(parents=True, mode=0o700)
            # the results come back through a descriptor on a file with no name, the grader's own
            results = _unnamed_file(self.run_dir)
            plan = {"cells": cells, "exercises": exercises, "step_timeout": self.limits.step_timeout,
                    "blocked_dirs": self.blocked, "allowed_dirs": self.isolation.allowed,
                    "results_fd": results}
            (workdir / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
            (workdir / "cases.pkl").write_bytes(cases_blob)
            spec = {**self._spec(workdir, token), "results_fd": results}
            spec_path = self.run_dir / f"{workdir.name}.spec.json"
            spec_path.write_text(json.dumps(spec), encoding="utf-8")
            status = self._supervise(spec_path, token, results)
            status.records, problem = read_results_fd(results, self.limits.result_cap)
            status.problem = status.problem or problem
            status.isolation = self.isolation.mode
            return status
        finally:
            if results >= 0:
                os.close(results)
            remove_tree(workdir)  # whatever the submission left (any depth), never raises
            for extra in (".jail.json", ".spec.json"):
                (workdir.parent / f"{workdir.name}{extra}").unlink(missing_ok=True)

    def _supervise(self, spec_path: Path, token: str, results: int | None = None) -> RunStatus:
        sup = None
        try:
            # Ctrl-C waits until the supervisor is recorded; it carries the token, so a sweep finds it
            with procs.interrupts_deferred(), self.lock:
                if self.stopping:
                    return RunStatus(problem="not run: the run was interrupted (Ctrl-C)")
                sup = subprocess.Popen([sys.executable, "-E", "-s", str(SUPERVISOR), str(spec_path)],
                                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, start_new_session=True,
                                       env={**os.environ, TOKEN_VAR: token},
                                       pass_fds=() if results is None else (results,))
                self.live.add(sup.pid)
            hung, out, err = self._wait(sup)
        except BaseException:  # Ctrl-C while it runs: its supervisor stops it, or we do
            if sup is not None:
                procs.halt(sup, HALT_S, lambda: self._rescue(None, token))
            raise
        finally:
            if sup is not None:
                with self.lock:
                    self.live.discard(sup.pid)
        lines = _json_lines(out)
        child = next((x["child_pid"] for x in lines if type(x.get("child_pid")) is int), None)
        final = next((x for x in reversed(lines) if "returncode" in x), None)
        if final is None or hung or sup.returncode != 0:
            self._rescue(child, token)
            return RunStatus(supervisor_died=True, timed_out=hung,
                             stderr=err.decode("utf-8", "replace")[-self.limits.output_cap:])
        return _status(final, self.limits.output_cap)

    def _wait(self, sup: subprocess.Popen) -> tuple[bool, bytes, bytes]:
        """The supervisor's output, waiting at most the longest the supervisor's fair deadline can
        stretch to, plus ``GRACE_S`` (the deadline the grader enforces itself); a stopped
        supervisor is resumed (SIGCONT) every second."""
        deadline = time.monotonic() + latest_end(self.limits.timeout) + GRACE_S
        while True:
            try:
                out, err = sup.communicate(timeout=max(0.05, min(1.0, deadline - time.monotonic())))
                return False, out, err
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    break
                with contextlib.suppress(OSError):
                    sup.send_signal(signal.SIGCONT)
        sup.kill()
        try:
            out, err = sup.communicate(timeout=5)
        except subprocess.TimeoutExpired:  # its pipes held open by someone else: give up on them
            out, err = b"", b""
        return True, out or b"", err or b""

    def _rescue(self, child: int | None, token: str) -> None:
        """The supervisor died: end the submission's processes ourselves."""
        name, value = TOKEN_VAR.encode(), token.encode()
        if child:
            procs.kill_group(child)

        def theirs(ps: dict) -> set[int]:
            return {p.pid for p in ps.values() if child and child in (p.pid, p.sid, p.pgid)
                    or procs.env_value(p.pid, name) == value}

        with self.lock:
            live = set(self.live)
        procs.sweep(theirs, spare=live)
        self.sweep_orphans()

    def sweep_orphans(self) -> int:
        """As a subreaper, kill and reap adopted processes that are not live supervisors."""
        if not self.reap_orphans:
            return 0
        me = os.getpid()
        with self.lock:
            keep = self.live | self.preexisting
            killed = procs.sweep(lambda ps: {p.pid for p in ps.values() if p.ppid == me} - keep,
                                 spare=keep)
            procs.reap(pid for pid, p in procs.snapshot().items() if p.ppid == me and pid not in keep)
        return len(killed)

    def final_sweep(self) -> int:
        """After the run: no process carrying this run's token may remain."""
        prefix = self.run_token.encode() + b"."
        name = TOKEN_VAR.encode()

        def leftovers(ps: dict) -> set[int]:
            return {p.pid for p in ps.values() if (procs.env_value(p.pid, name) or b"").startswith(prefix)}

        killed = procs.sweep(leftovers)
        return len(killed) + self.sweep_orphans()

    def close(self) -> int:
        """End of the run: the final sweep, then stop adopting orphans. Returns processes killed."""
        killed = self.final_sweep()
        if self.reap_orphans:
            procs.become_subreaper(False)
        remove_tree(self.run_dir)
        return killed

    def interrupt(self) -> None:
        """Ctrl-C: ask every live supervisor to clean up and stop; start no other."""
        with self.lock:
            self.stopping = True
            for pid in self.live:
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass


# The course modules a case's pickle may name: the case inputs (``course_utils.labs.case_inputs``)
# and the labs and toolkit they are built on. The bank is off limits in the submission's process;
# the course machinery, the grader and the drills hold nothing a case needs.
CASE_INPUT_PARTS = ("course_utils.labs", "course_utils.toolkit", "course_utils.core")


def _course_module(name: str) -> bool:
    return (name == "course_utils" or name.startswith("course_utils.")) and all(
        part.isidentifier() for part in name.split("."))


def pickle_cases(cases: dict[str, list[tuple[tuple, dict]]]) -> bytes:
    """The inputs for the submission's process; refuses any whose pickle names a course module
    outside ``CASE_INPUT_PARTS`` (the bank above all: the bank is off limits, case inputs are allowed)."""
    import pickletools

    blob = pickle.dumps(cases, protocol=pickle.HIGHEST_PROTOCOL)
    for _, arg, _ in pickletools.genops(blob):
        if isinstance(arg, str) and _course_module(arg) and not any(
                arg == part or arg.startswith(f"{part}.") for part in CASE_INPUT_PARTS):
            raise ValueError(f"case inputs refer to {arg}: the submission's process may load the case "
                             "inputs (course_utils.labs.case_inputs) and the toolkit, never the bank")
    return blob
