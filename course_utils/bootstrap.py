"""Set up the course and then open JupyterLab or run the tests: the README's two commands.

    python3 course_utils/bootstrap.py lab     # set up, open JupyterLab at lesson 00
    python3 course_utils/bootstrap.py test    # set up, run the whole test suite
    python3 course_utils/bootstrap.py test --busy 2   # ... with 2 CPU hogs running beside it
    python3 course_utils/bootstrap.py matrix  # each torch of the tested matrix in its own venv
    python3 course_utils/bootstrap.py colab   # into this Python (Google Colab), keeping its torch

Standard library only: it runs before anything is installed. Setup makes ``.venv`` next to this
repository (or at ``$MPS_DETECTIVE_VENV``) and installs the course with ``constraints.txt`` (torch
pinned, so no step can pull a CUDA build): ``lab`` and ``setup`` install what a learner's kernel and
the ``course`` command import; ``test`` adds the ``dev`` extra (pytest, nbval, playwright, ruff, ...).
It is idempotent: a stamp records the inputs' hash and the extras installed, so a second run
installs nothing, and ``test`` after ``lab`` installs only the extra.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("MPS_DETECTIVE_VENV", ROOT / ".venv"))
CONSTRAINTS = ROOT / "course_utils" / "constraints.txt"
STAMP = VENV / ".mps-detective-stamp"
SCRATCH = ROOT / "build" / "test-home"


def say(message: str) -> None:
    print(f"[setup] {message}", flush=True)


def venv_bin(name: str) -> Path:
    """A program inside the course's virtual environment."""
    folder = "Scripts" if os.name == "nt" else "bin"
    suffix = ".exe" if os.name == "nt" else ""
    return VENV / folder / f"{name}{suffix}"


def inputs_hash() -> str:
    """What the environment is built from: changing any of these triggers a reinstall."""
    digest = hashlib.sha256(sys.version.encode())
    for path in (ROOT / "pyproject.toml", CONSTRAINTS):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def read_stamp() -> tuple[str, frozenset[str]]:
    """The stamp's inputs hash and the extras installed with it (("", {}) when there is none).

    An older stamp holds only the hash: that setup always installed the ``dev`` extra."""
    try:
        lines = STAMP.read_text().splitlines()
    except OSError:
        return "", frozenset()
    extras = [line.split(":", 1)[1] for line in lines[1:] if line.startswith("extras:")]
    installed = extras[0].split(",") if extras else ["dev"]
    return (lines[0] if lines else ""), frozenset(e.strip() for e in installed if e.strip())


def write_stamp(digest: str, extras: frozenset[str]) -> None:
    STAMP.write_text(f"{digest}\nextras: {','.join(sorted(extras))}\n")


def run(*cmd: str | Path, env: dict | None = None) -> int:
    """Run a command from the repository root, streaming its output."""
    return subprocess.call([str(c) for c in cmd], cwd=ROOT, env=env)


def pip(*args: str) -> None:
    code = run(venv_bin("python"), "-m", "pip", "install", "--quiet", "-c", CONSTRAINTS, *args)
    if code:
        sys.exit(f"[setup] pip install {' '.join(args)} failed (exit {code}); see the output above")


def setup(extras: tuple[str, ...] = ()) -> None:
    """Create the virtual environment and install the course (the runtime, plus ``extras``, e.g.
    ``("dev",)`` for the tests) unless the stamp says all of it is current."""
    if sys.version_info < (3, 10):  # noqa: UP036 - this file must run on old Pythons to say so
        sys.exit(f"[setup] Python >= 3.10 is needed; this is {sys.version.split()[0]}. "
                 "Run the command with a newer python3.")
    wanted = inputs_hash()
    stamped, installed = read_stamp()
    current = stamped == wanted and venv_bin("course").exists()
    if current and installed >= set(extras):
        say(f"environment in {VENV.name} is up to date; nothing to install")
        return
    start = time.monotonic()
    # What an existing environment has stays installed, at the current pins, extras included.
    keep = frozenset(extras) | (installed if venv_bin("python").exists() else frozenset())
    if not venv_bin("python").exists():
        say(f"creating the virtual environment {VENV}")
        if run(sys.executable, "-m", "venv", VENV):
            sys.exit("[setup] could not create the virtual environment")
    if not current:
        say("installing torch 2.13.0 first (pinned: nothing later may replace it)")
        pip("torch==2.13.0")
    if "dev" in keep:
        say("installing the course and its test tools (JupyterLab, ipywidgets, pytest, nbval, ...)")
    else:
        say("installing the course (JupyterLab, ipywidgets, matplotlib, ...)")
    pip("-e", f"{ROOT}[{','.join(sorted(keep))}]" if keep else str(ROOT))
    write_stamp(wanted, keep)
    say("building matplotlib's font cache (once; the first plot of a lesson then comes at once)")
    warm_font_cache(dict(os.environ))
    say(f"done in {time.monotonic() - start:.0f} s")


def scratch_env() -> dict:
    """Keep Jupyter, IPython, matplotlib and progress files of a test run out of $HOME."""
    env = dict(os.environ)
    for var, sub in (("JUPYTER_CONFIG_DIR", "jupyter-config"), ("JUPYTER_DATA_DIR", "jupyter-data"),
                     ("JUPYTER_RUNTIME_DIR", "jupyter-runtime"), ("IPYTHONDIR", "ipython"),
                     ("MPLCONFIGDIR", "matplotlib")):
        env[var] = str(SCRATCH / sub)
        (SCRATCH / sub).mkdir(parents=True, exist_ok=True)
    # A fresh, empty progress folder each run: hints and attempt counts start from zero.
    env["MPS_DETECTIVE_HOME"] = tempfile.mkdtemp(prefix="progress-", dir=SCRATCH)
    env.pop("MPLBACKEND", None)  # an Agg backend around kernels makes figures vanish from outputs
    env["MPS_DETECTIVE_DEVICE"] = "cpu"  # stored outputs come from the CPU reference run
    # Two pytest workers, their kernels and the browser share the cores: torch's thread pool in
    # every one of them only adds waiting (the strict nbval stage: 67 s on one thread, 78 s with
    # the default, on a quiet 2-core machine; the stored outputs are the same).
    env.setdefault("OMP_NUM_THREADS", "1")
    # Built here, not by the first lesson that plots: on a busy machine the build can take over
    # matplotlib's 5 s, and its notice on stderr would break that cell's stored outputs.
    warm_font_cache(env)
    return env


def warm_font_cache(env: dict) -> None:
    """Have matplotlib build its font cache (in ``env``'s MPLCONFIGDIR, else the user's cache
    folder) unless it is there. Best effort: without it the first plot only takes longer."""
    try:
        subprocess.run([str(venv_bin("python")), "-c", "import matplotlib.font_manager"], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, timeout=300)
    except (OSError, subprocess.SubprocessError):
        pass


TEST_STAGES = (
    ("lint", ("ruff", "check", "course_utils", "tests")),
    ("exercises/ in sync with solutions/", ("course", "build-exercises", "--check")),
    ("unit tests, browser tests, lessons and solutions (strict nbval)",
     ("pytest", "tests", "notebooks", "solutions", "--nbval", "--nbval-current-env",
      "--nbval-sanitize-with", "tests/nbval_sanitize.cfg", "--nbval-cell-timeout", "180",
      "-n", "2", "--dist", "loadfile", "-rs", "--durations", "15")),
    ("exercise notebooks, unsolved (nbval-lax)",
     ("pytest", "exercises", "--nbval-lax", "--nbval-current-env", "--nbval-cell-timeout", "180",
      "-n", "2", "--dist", "loadfile")),
)


CHROMIUM = "/usr/bin/chromium"


def ensure_chromium() -> None:
    """The system packages the tests need, installed when missing and we can (root + apt): Debian's
    chromium (the browser tests) and bubblewrap (``course grade``'s jail; without it the grader's
    tests use the built-in jail or the guards)."""
    needed = {CHROMIUM: ("chromium", "the browser tests (tests/e2e) will be skipped"),
              "/usr/bin/bwrap": ("bubblewrap", "course grade's tests run without bubblewrap")}
    missing = {path: why for path, why in needed.items() if not Path(path).exists()}
    if not missing:
        return
    names = " ".join(package for package, _ in missing.values())
    if sys.platform != "linux" or not Path("/usr/bin/apt-get").exists() or os.geteuid() != 0:
        how = "no apt-get here" if not Path("/usr/bin/apt-get").exists() else "installing needs root"
        for path, (package, effect) in missing.items():
            say(f"no {path} ({how}: sudo apt-get install {package}): {effect}")
        return
    say(f"installing Debian's {names} for the tests (apt-get, about 30 s)")
    quiet = {"stdout": subprocess.DEVNULL}
    if subprocess.call(["apt-get", "update", "-qq"], **quiet) or subprocess.call(
            ["apt-get", "install", "-y", "-qq", *names.split()], **quiet,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}):
        for package, effect in missing.values():
            say(f"could not install {package}: {effect}")


PROXY_DIR = ROOT / "build" / "node"
PROXY = PROXY_DIR / "node_modules" / ".bin" / "configurable-http-proxy"


def ensure_proxy() -> None:
    """The JupyterHub test (tests/test_hub.py) needs configurable-http-proxy: install it from npm
    into build/node/ when missing and npm is here; otherwise say why that test will be skipped."""
    if PROXY.exists():
        return
    npm = shutil.which("npm")
    if npm is None:
        say("no npm here: the JupyterHub test (tests/test_hub.py) will be skipped "
            "(it needs configurable-http-proxy from npm)")
        return
    say("installing configurable-http-proxy 5 into build/node/ for the JupyterHub test (npm)")
    PROXY_DIR.mkdir(parents=True, exist_ok=True)
    if subprocess.call([npm, "install", "--prefix", str(PROXY_DIR), "--no-save", "--no-audit",
                        "--no-fund", "--loglevel=error", "configurable-http-proxy@5"],
                       stdout=subprocess.DEVNULL) or not PROXY.exists():
        say("could not install configurable-http-proxy: the JupyterHub test will be skipped")


# A CPU hog: a busy loop that also ends by itself once its parent (this script, whose pid it is
# given: it may already be gone when the hog starts) is gone, so not even a SIGKILL of the test
# command can leave one spinning.
HOG = ("import os, sys\nparent = int(sys.argv[1])\nwhile os.getppid() == parent:\n"
       "    for _ in range(200_000):\n        pass\n")


def _stop(signum, frame):  # noqa: ARG001 - a signal handler's signature
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def cpu_hogs(n: int):
    """Keep ``n`` CPU hogs (``python -c HOG``) running for the block; kill them afterwards,
    whatever ends the block: success, failure, an exception, Ctrl-C, or SIGTERM."""
    hogs: list[subprocess.Popen] = []
    on_main_thread = n > 0 and threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _stop) if on_main_thread else None
    try:
        for _ in range(n):
            hogs.append(subprocess.Popen([sys.executable, "-c", HOG, str(os.getpid())],
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL))
        if hogs:
            say(f"{n} CPU hog(s) running beside the tests (pids {', '.join(str(h.pid) for h in hogs)})")
        yield hogs
    finally:
        for hog in hogs:
            if hog.poll() is None:
                hog.kill()
        for hog in hogs:
            hog.wait()
        if hogs:
            say(f"stopped the {len(hogs)} CPU hog(s)")
        if on_main_thread:
            signal.signal(signal.SIGTERM, previous)


def test(busy: int = 0) -> int:
    """Run every stage (beside ``busy`` CPU hogs); report each; exit non-zero if any failed."""
    ensure_chromium()
    ensure_proxy()
    env, failed = scratch_env(), []
    with cpu_hogs(busy):
        for name, (program, *args) in TEST_STAGES:
            say(f"test stage: {name}")
            start = time.monotonic()
            code = run(venv_bin(program), *args, env=env)
            say(f"  {name}: {'ok' if code == 0 else f'FAILED (exit {code})'} "
                f"in {time.monotonic() - start:.0f} s")
            if code:
                failed.append(name)
    if failed:
        say(f"failed stages: {', '.join(failed)}")
        return 1
    say("all test stages passed")
    return 0


def lab(extra: list[str]) -> int:
    """Open JupyterLab at lesson 00 (extra arguments go to `jupyter lab`)."""
    return run(venv_bin("course"), "lab", *extra)


def parse_test_options(args: list[str]) -> argparse.Namespace:
    """The test command's options (parsed before setup, so a typo costs nothing)."""
    parser = argparse.ArgumentParser(prog="bootstrap.py test", description="run the whole test suite")
    parser.add_argument("--busy", type=int, default=0, metavar="N",
                        help="run N CPU hogs beside the tests (a busy machine, as on CI); they are "
                             "stopped afterwards, also on failure or Ctrl-C")
    options = parser.parse_args(args)
    if options.busy < 0:
        parser.error("--busy needs a number >= 0")
    return options


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("lab", "test", "setup", "matrix", "colab"):
        print(__doc__)
        return 2
    if argv[0] in ("matrix", "colab"):  # not .venv (see course_utils/matrix.py and colab.py)
        return run(sys.executable, ROOT / "course_utils" / f"{argv[0]}.py", *argv[1:])
    options = parse_test_options(argv[1:]) if argv[0] == "test" else None
    setup(extras=("dev",) if options is not None else ())
    if options is not None:
        return test(busy=options.busy)
    if argv[0] == "lab":
        return lab(argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
