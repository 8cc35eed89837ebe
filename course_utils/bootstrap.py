"""Set up the course and then open JupyterLab or run the tests: the README's two commands.

    python3 course_utils/bootstrap.py lab     # set up, open JupyterLab at lesson 00
    python3 course_utils/bootstrap.py test    # set up, run the whole test suite

Standard library only: it runs before anything is installed. Setup makes ``.venv`` next to this
repository (or at ``$MPS_DETECTIVE_VENV``) and installs the course with ``constraints.txt`` (torch
pinned, so no step can pull a CUDA build): ``lab`` and ``setup`` install what a learner's kernel and
the ``course`` command import; ``test`` adds the ``dev`` extra (pytest, nbval, playwright, ruff, ...).
It is idempotent: a stamp records the inputs' hash and the extras installed, so a second run
installs nothing, and ``test`` after ``lab`` installs only the extra.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
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
    return env


TEST_STAGES = (
    ("lint", ("ruff", "check", "course_utils", "tests")),
    ("exercises/ in sync with solutions/", ("course", "build-exercises", "--check")),
    ("unit tests, browser tests, lessons and solutions (strict nbval)",
     ("pytest", "tests", "notebooks", "solutions", "--nbval", "--nbval-current-env",
      "--nbval-sanitize-with", "tests/nbval_sanitize.cfg", "--nbval-cell-timeout", "180",
      "-n", "2", "--dist", "loadfile", "-rs")),
    ("exercise notebooks, unsolved (nbval-lax)",
     ("pytest", "exercises", "--nbval-lax", "--nbval-current-env", "--nbval-cell-timeout", "180",
      "-n", "2", "--dist", "loadfile")),
)


CHROMIUM = "/usr/bin/chromium"


def ensure_chromium() -> None:
    """The browser tests need Debian's chromium: install it when missing and we can (root + apt)."""
    if Path(CHROMIUM).exists():
        return
    if sys.platform != "linux" or not Path("/usr/bin/apt-get").exists():
        say(f"no {CHROMIUM} and no apt-get here: the browser tests (tests/e2e) will be skipped")
        return
    if os.geteuid() != 0:
        say("chromium is missing and installing it needs root (sudo apt-get install chromium): "
            "the browser tests (tests/e2e) will be skipped")
        return
    say("installing Debian's chromium for the browser tests (apt-get, about 30 s)")
    quiet = {"stdout": subprocess.DEVNULL}
    if subprocess.call(["apt-get", "update", "-qq"], **quiet) or subprocess.call(
            ["apt-get", "install", "-y", "-qq", "chromium"], **quiet,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}):
        say("could not install chromium: the browser tests (tests/e2e) will be skipped")


def test() -> int:
    """Run every stage; report each; exit non-zero if any failed."""
    ensure_chromium()
    env, failed = scratch_env(), []
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


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("lab", "test", "setup"):
        print(__doc__)
        return 2
    setup(extras=("dev",) if argv[0] == "test" else ())
    if argv[0] == "test":
        return test()
    if argv[0] == "lab":
        return lab(argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
