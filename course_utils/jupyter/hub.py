"""The course on JupyterHub 6 (``course hub-config``), and each learner's course folder.

``course hub-config --flavour plain|tljh|z2jh`` prints (or writes with ``--out DIR``) what an
instructor needs: a ``jupyterhub_config.py``; the same settings for The Littlest JupyterHub (a
``tljh-config`` script and a config snippet); or a zero-to-jupyterhub ``config.yaml`` with the
Dockerfile of the image it runs. In all three every learner's server runs in the course's Python
environment (its kernel, ``course`` on PATH, ipywidgets' JupyterLab extension) and is started by
this file's launcher, which runs as the learner, before the server:

    python .../course_utils/jupyter/hub.py prepare --source COURSE -- jupyterhub-singleuser ...

It gives the learner their own folder ``~/mps-detective`` (JupyterLab opens there): a copy of the
lessons (``notebooks/``) and of the exercise notebooks (``exercises/``, which ``course start NN``
copies into ``workspace/``, their work), and ``progress/``, their ``MPS_DETECTIVE_HOME``. Files
already there are the learner's and are never overwritten; a lesson added later is copied in. Then
it sets ``MPS_DETECTIVE_ROOT``/``MPS_DETECTIVE_HOME``, puts the environment's ``bin`` first on
PATH and the course's Jupyter settings (``lab_config/``: ``course`` on PATH in the learner's
kernels and terminals, the page's CSS) on JUPYTER_CONFIG_PATH, and replaces itself with the
server (same process: the spawner's pid stays right). Run by path it imports the standard
library only, so starting a server does not load torch.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from string import Template

FOLDER = "~/mps-detective"  # each learner's course folder (the server's root folder)
COPIED = ("notebooks", "exercises")  # the lessons, and the exercise notebooks `course start` copies
START_URL = "/lab/tree/notebooks/00_start_here.ipynb"
FLAVOURS = ("plain", "tljh", "z2jh")
SERVER_SOURCE = "/opt/mps-detective"  # where the TLJH script and the z2jh image put the course
LAB_CONFIG = Path(__file__).resolve().parent / "lab_config"  # the course's jupyter_server_config.py


def course_environment(environ) -> None:
    """Set up ``environ`` for a Jupyter server of the course: this Python environment's ``bin``
    first on PATH (where ``course`` is) and the course's Jupyter settings (``LAB_CONFIG``: PATH for
    kernels and terminals, the terminal's shell, the page's CSS) first on JUPYTER_CONFIG_PATH."""
    for var, first in (("PATH", str(Path(sys.executable).parent)), ("JUPYTER_CONFIG_PATH", str(LAB_CONFIG))):
        rest = [p for p in environ.get(var, "").split(os.pathsep) if p and p != first]
        environ[var] = os.pathsep.join([first, *rest])


def default_source() -> Path | None:
    """The course checkout this file belongs to (it holds notebooks/ and exercises/), if any."""
    here = Path(__file__).resolve().parents[2]
    return here if all((here / name).is_dir() for name in COPIED) else None


def prepare(source: Path, root: Path) -> list[Path]:
    """Make ``root`` a learner's course folder (see the module's docstring); return what was copied."""
    copied = []
    for name in COPIED:
        if not (source / name).is_dir():
            raise FileNotFoundError(f"{source / name}: no such folder (is --source the course checkout?)")
        for path in sorted((source / name).iterdir()):
            target = root / name / path.name
            if path.name.startswith(".") or not path.is_file() or os.path.lexists(target):
                continue  # the learner's copy, or not a lesson file
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f".{path.name}.partial")
            shutil.copyfile(path, partial)  # a copy cut short is never taken for the learner's file
            os.replace(partial, target)
            copied.append(target)
    for name in ("workspace", "progress"):
        (root / name).mkdir(parents=True, exist_ok=True)
    return copied


def learner_root(environ: dict) -> Path:
    """The learner's folder: $MPS_DETECTIVE_ROOT, else the server's root ($JUPYTERHUB_ROOT_DIR, the
    spawner's notebook_dir), else ~/mps-detective."""
    chosen = environ.get("MPS_DETECTIVE_ROOT") or environ.get("JUPYTERHUB_ROOT_DIR") or FOLDER
    return Path(os.path.expanduser(chosen))


def launch(argv: list[str], environ=os.environ) -> int:
    """``hub.py prepare [--source DIR] [--root DIR] [-- COMMAND ARGS...]``: prepare the learner's
    folder, then (given a command) replace this process with it, in that folder's settings."""
    import argparse

    own, command = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(prog="hub.py prepare", description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default=default_source(), type=Path,
                        help="the course checkout (default: the one this file is in)")
    parser.add_argument("--root", type=Path, help="the learner's folder (default: see learner_root)")
    args = parser.parse_args(own)
    if args.source is None:
        parser.error("no course checkout found beside this file: pass --source")
    root = Path(os.path.expanduser(args.root)) if args.root else learner_root(environ)
    try:
        copied = prepare(args.source, root)
    except OSError as err:
        print(f"mps-detective: could not prepare {root}: {err}", file=sys.stderr)
        return 1
    environ["MPS_DETECTIVE_ROOT"] = str(root)
    environ.setdefault("MPS_DETECTIVE_HOME", str(root / "progress"))
    course_environment(environ)
    print(f"mps-detective: {root} ready ({len(copied)} file(s) copied)", file=sys.stderr, flush=True)
    if command:
        os.execvpe(command[0], command, dict(environ))
    return 0


# ---------------------------------------------------------------- the configurations
SPAWNER = """\
COURSE_PREFIX = "$prefix"  # the course's Python environment (python, jupyterhub-singleuser)
COURSE_SOURCE = "$source"  # the course checkout (lessons are copied from it; read-only is fine)

# Each learner's server: the launcher prepares ~/mps-detective (their copy of the lessons, exercises/
# for `course start NN`, workspace/, progress/ = MPS_DETECTIVE_HOME), never overwriting their files,
# then starts the course environment's jupyterhub-singleuser: its kernel is the course's Python and
# its JupyterLab has the ipywidgets extension.
c.Spawner.cmd = [
    f"{COURSE_PREFIX}/bin/python", f"{COURSE_SOURCE}/course_utils/jupyter/hub.py", "prepare",
    "--source", COURSE_SOURCE, "--", f"{COURSE_PREFIX}/bin/jupyterhub-singleuser",
]
c.Spawner.notebook_dir = "$folder"
c.Spawner.default_url = "$start_url"
c.Spawner.start_timeout = 180  # s; measured on 2 cores: $start_s
c.Spawner.http_timeout = 120
"""

PLAIN = """\
# jupyterhub_config.py: MPS Detective on JupyterHub 6 (written by `course hub-config`).
#   jupyterhub -f jupyterhub_config.py
# JupyterHub's defaults stay: learners log in as Unix users of this machine (PAMAuthenticator) and
# each server runs as its learner (LocalProcessSpawner); the hub needs root for that and
# configurable-http-proxy on PATH (npm install -g configurable-http-proxy@5). See the README's
# "Run a workshop".
c = get_config()  # noqa: F821 - provided by JupyterHub's config loader

$spawner
# Who may log in, and who collects and grades (instructors see every server):
# c.Authenticator.allowed_users = {"alice", "bob"}
# c.Authenticator.admin_users = {"instructor"}
# c.JupyterHub.bind_url = "http://0.0.0.0:8000"
# LocalProcessSpawner enforces no memory limit; plan about $memory_mb MB per learner (measured).
"""

TLJH_SNIPPET = """\
# mps-detective.py: MPS Detective's settings for The Littlest JupyterHub (JupyterHub 6).
# Goes into /opt/tljh/config/jupyterhub_config.d/ (tljh-setup.sh puts it there), then:
#   sudo tljh-config reload
# TLJH's SystemdSpawner runs each server as the learner's user (jupyter-<name>) with the limits
# of `tljh-config set limits.memory/limits.cpu`.
$spawner"""

TLJH_SCRIPT = """\
#!/bin/sh
# MPS Detective on The Littlest JupyterHub (written by `course hub-config --flavour tljh`).
# Run as root on the TLJH machine, in the folder holding this file and mps-detective.py, after
# copying (or git-cloning) the course checkout to $source.
set -eu
test -d "$source/notebooks" || { echo "copy the course checkout to $source first"; exit 1; }
# 1. The course in its own environment, torch pinned by the constraints file (needs python3-venv).
python3 "$source/course_utils/bootstrap.py" setup
"$prefix/bin/pip" install --quiet -c "$source/course_utils/constraints.txt" -e "$source[hub]"
# 2. Every learner's server: the course's kernel, tools, folder and widgets.
test ! -d "$source/solutions" || chmod -R go-rwx "$source/solutions"  # worked answers: not for learners
install -m 0644 mps-detective.py /opt/tljh/config/jupyterhub_config.d/mps-detective.py
# 3. TLJH's own settings (measured: about $memory_mb MB per learner after importing torch).
tljh-config set user_environment.default_app jupyterlab
tljh-config set limits.memory 1G
tljh-config set limits.cpu 1
tljh-config set services.cull.timeout 3600
tljh-config add-item users.admin instructor
tljh-config reload
"""

Z2JH_CONFIG = """\
# config.yaml: MPS Detective on zero-to-jupyterhub (a chart release whose hub is JupyterHub 6),
# written by `course hub-config --flavour z2jh`. Build the image with the Dockerfile beside this
# file, from the course checkout, and push it:
#   docker build -f Dockerfile -t REGISTRY/mps-detective:0.1.0 /path/to/the/checkout
#   docker push REGISTRY/mps-detective:0.1.0
#   helm upgrade --install jhub jupyterhub/jupyterhub -n jhub --create-namespace --values config.yaml
singleuser:
  image:
    name: REGISTRY/mps-detective
    tag: "0.1.0"
  # The launcher prepares ~/mps-detective on the learner's volume, then starts the server.
  cmd: ["$prefix/bin/python", "$source/course_utils/jupyter/hub.py", "prepare",
        "--source", "$source", "--", "$prefix/bin/jupyterhub-singleuser"]
  notebookDir: "$folder"
  defaultUrl: "$start_url"
  startTimeout: 300
  memory:  # measured: about $memory_mb MB per learner once the kernel has imported torch
    guarantee: 512M
    limit: 1G
  cpu:
    guarantee: 0.25
    limit: 1
  storage:
    capacity: 2Gi  # the learner's home: their course folder, work and progress
hub:
  config:
    Authenticator:
      admin_users: [instructor]  # instructors: collect and grade
      # allowed_users: [alice, bob]
    # JupyterHub:
    #   authenticator_class: github  # or generic-oauth, ...; see z2jh's authentication guide
cull:
  enabled: true
  timeout: 3600
"""

DOCKERFILE = """\
# The image of every learner's server on z2jh: MPS Detective in its own environment, torch's CPU
# build pinned by the course's constraints file. Build it from the course checkout:
#   docker build -f Dockerfile -t REGISTRY/mps-detective:0.1.0 /path/to/the/checkout
FROM python:3.12-slim
RUN useradd --create-home --uid 1000 --gid 100 jovyan
# Only what learners need (no solutions/, no .venv or workspace/ of the checkout):
COPY pyproject.toml README.md $source/
COPY course_utils $source/course_utils
COPY notebooks $source/notebooks
COPY exercises $source/exercises
RUN python -m venv $prefix \\
 && $prefix/bin/pip install --no-cache-dir --index-url https://download.pytorch.org/whl/cpu torch==2.13.0 \\
 && $prefix/bin/pip install --no-cache-dir -c $source/course_utils/constraints.txt -e "$source[hub]"
ENV PATH=$prefix/bin:$$PATH
USER 1000
WORKDIR /home/jovyan
CMD ["jupyterhub-singleuser"]
"""

# Measured with tests/benchmarks/bench_hub.py (README, "Run a workshop"):
MEASURED = {"memory_mb": "385", "start_s": "12 s for one of 3, 55 s for the slowest of 15 at once"}


def config_files(flavour: str, prefix: str | None = None, source: str | None = None) -> dict[str, str]:
    """File name -> text of ``flavour``'s configuration. ``plain`` defaults to this environment and
    this checkout; ``tljh`` and ``z2jh`` to /opt/mps-detective and its .venv."""
    if flavour not in FLAVOURS:
        raise ValueError(f"flavour must be one of {', '.join(FLAVOURS)}, not {flavour!r}")
    if source is None:
        found = default_source() if flavour == "plain" else Path(SERVER_SOURCE)
        if found is None:
            raise FileNotFoundError("no course checkout beside this package: pass --source")
        source = str(found)
    if prefix is None:
        prefix = sys.prefix if flavour == "plain" else f"{source}/.venv"
    values = {"prefix": prefix, "source": source, "folder": FOLDER, "start_url": START_URL, **MEASURED}
    values["spawner"] = Template(SPAWNER).substitute(values)
    fill = lambda text: Template(text).substitute(values)  # noqa: E731
    if flavour == "plain":
        return {"jupyterhub_config.py": fill(PLAIN)}
    if flavour == "tljh":
        return {"tljh-setup.sh": fill(TLJH_SCRIPT), "mps-detective.py": fill(TLJH_SNIPPET)}
    return {"config.yaml": fill(Z2JH_CONFIG), "Dockerfile": fill(DOCKERFILE)}


def hub_config(flavour: str, out: Path | None = None, prefix: str | None = None,
               source: str | None = None) -> str:
    """``course hub-config``: the files' text, or (with ``out``) write them into that folder, never
    replacing a file already there; returns what to print."""
    from course_utils.core.errors import CourseError

    try:
        files = config_files(flavour, prefix, source)
    except (ValueError, FileNotFoundError) as err:
        raise CourseError(str(err)) from None
    if out is None:
        return "\n".join(f"# ===== {name} =====\n{text}" for name, text in files.items())
    out.mkdir(parents=True, exist_ok=True)
    there = [name for name in files if os.path.lexists(out / name)]
    if there:
        raise CourseError(f"{', '.join(str(out / n) for n in there)} already there: left alone "
                          "(move it away, or write into another folder)")
    for name, text in files.items():
        with open(out / name, "x", encoding="utf-8") as fh:
            fh.write(text)
        if name.endswith(".sh"):
            os.chmod(out / name, 0o755)
    return "\n".join(f"wrote {out / name}" for name in files)


if __name__ == "__main__":  # the launcher: python .../course_utils/jupyter/hub.py prepare ...
    if sys.argv[1:2] != ["prepare"]:
        sys.exit("usage: hub.py prepare [--source DIR] [--root DIR] [-- COMMAND ARGS...]")
    sys.exit(launch(sys.argv[2:]))
