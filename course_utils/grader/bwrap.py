"""The submission's jail built by bubblewrap (``bwrap``, the sandbox Flatpak uses), where installed.

``command`` wraps the submission's command so that it runs in new user, PID, network, IPC and UTS
namespaces, with no capability, in a new session, killed with its parent, and sees

- the whole file system read-only (the Python installation, ``$HOME``, the standard library the
  grader's own processes run included);
- an empty, private ``/tmp`` and a fresh ``/dev`` and ``/proc`` (only its own processes);
- an empty, read-only folder over each hidden folder (the course checkout, the class folders, the
  gradebook's folder, the folder holding every grading run's work folders), with the kept folders
  inside them mounted back read-only (the Python environment, the bank-less copy of the package);
- its own work folder, the only writable place outside its private ``/tmp``.

``probe`` runs a jailed Python once and checks each of these (the user namespaces it needs are
off on some machines, or inside some containers); ``isolation`` falls back when it fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

FLAGS = ["--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
         "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
SYSTEM = {"/", "/usr", "/etc", "/lib", "/lib64", "/bin", "/sbin", "/proc", "/sys", "/dev", "/var",
          "/run", "/opt", "/tmp"}


def binary() -> str | None:
    """The ``bwrap`` program, if installed."""
    return shutil.which("bwrap")


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _outermost(folders: list[str]) -> list[str]:
    folders = sorted(set(folders))
    return [f for f in folders if not any(_inside(f, g) and f != g for g in folders)]


def command(hide: list[str], keep: list[str], writable: list[str], cwd: str, argv: list[str],
            program: str | None = None) -> list[str]:
    """The ``bwrap`` command line that runs ``argv`` as the module docstring says."""
    real = [os.path.realpath(h) for h in hide if os.path.isdir(h)]
    covered = ["/tmp", *(h for h in _outermost(real) if h not in SYSTEM and not _inside(h, "/tmp"))]
    kept = sorted({os.path.realpath(k) for k in keep if os.path.exists(k)}, key=len)
    out = [program or binary() or "bwrap", *FLAGS, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for folder in covered:
        out += ["--tmpfs", folder]
    for folder in kept:
        if any(_inside(folder, c) for c in covered) and not any(_inside(folder, w) for w in writable):
            out += ["--ro-bind", folder, folder]
    for folder in writable:
        out += ["--bind", folder, folder]
    for folder in sorted({os.path.realpath(h) for h in hide if os.path.isdir(h)}):
        if any(_inside(folder, k) and folder != k for k in kept):  # the bank inside a kept package
            out += ["--tmpfs", folder, "--remount-ro", folder]
    for folder in covered[1:]:
        out += ["--remount-ro", folder]
    return [*out, "--chdir", cwd, "--", *argv]


PROBE = r"""
import os, sys
gone, writable = sys.argv[1:-1], sys.argv[-1]
def writes(path):
    try:
        with open(os.path.join(path, ".probe"), "w"):
            return True
    except OSError:
        return False
ok = (os.getpid() == 2 and sorted(int(p) for p in os.listdir("/proc") if p.isdigit()) == [1, 2]
      and not any(map(os.path.lexists, gone)) and writes(writable) and writes("/tmp")
      and not writes(sys.prefix) and not writes(os.path.expanduser("~"))
      and not writes(os.path.dirname(os.__file__)))
sys.exit(0 if ok else 1)
"""


def probe(hidden: list[str], gone: list[str], keep: list[str], work: str,
          timeout: float = 20.0) -> str | None:
    """None when bubblewrap builds the jail here as ``command`` promises (a jailed Python is PID 2
    beside init only, cannot see ``gone``, writes only its work folder and ``/tmp``, not the
    interpreter's folders nor ``$HOME``), else why not (one line)."""
    program = binary()
    if program is None:
        return "bubblewrap (bwrap) is not installed"
    argv = [sys.executable, "-I", "-c", PROBE, *gone, work]
    try:
        done = subprocess.run(command(hidden, keep, [work], work, argv, program),
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"the bubblewrap probe failed ({type(err).__name__})"
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return why[-1][:200] if why else "the bubblewrap jail did not hold (probe exited 1)"
    return None
