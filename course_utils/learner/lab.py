"""``course lab``: JupyterLab at the learner's own copy of lesson 00, started with the course's
Jupyter settings (``hub.course_environment``: ``course`` on PATH in cells and terminals, the page's
CSS) and with lesson 00 as the URL it opens or prints; JupyterLab's news prompt answered no."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from course_utils.core.errors import course_root

NEWS_SETTING = ("@jupyterlab/apputils-extension:notification", "fetchNews")
NEWS_OVERRIDE = "mps-detective.json"  # the course's own file among JupyterLab's settings overrides


def quiet_news(app_dir: Path | None = None) -> Path | None:
    """Answer JupyterLab's "get notified about official Jupyter news?" prompt with no, before it
    is asked: a default in the lab's ``settings/overrides.d`` (read at start-up; no network call;
    a choice the learner makes in Settings still wins). ``app_dir``: JupyterLab's application
    folder (default: this environment's). Returns the file, or None where it cannot be written."""
    import json

    from course_utils.core.files import write_atomically

    if app_dir is None:
        from jupyterlab.commands import get_app_dir

        app_dir = Path(get_app_dir())
    plugin, key = NEWS_SETTING
    path = Path(app_dir) / "settings" / "overrides.d" / NEWS_OVERRIDE
    try:
        write_atomically(path, json.dumps({plugin: {key: "false"}}, indent=2))
    except OSError:  # a read-only, shared environment: JupyterLab then asks once, as it always did
        return None
    return path


def open_lab(jupyter_args: list[str]) -> int:
    """Open JupyterLab at the learner's own copy of lesson 00 (made on first use, outputs cleared,
    never overwritten), so running it leaves notebooks/ as it is; ``jupyter_args`` go to
    ``jupyter lab``. Returns JupyterLab's exit code."""
    from urllib.parse import quote

    from course_utils.jupyter.hub import course_environment
    from course_utils.learner.workspace import start_lesson

    root = course_root()
    quiet_news()
    lesson = start_lesson("00", root=root)[0]
    top = root if lesson.resolve().is_relative_to(root.resolve()) else lesson.parents[1]  # a moved workspace
    start_url = "/lab/tree/" + quote(lesson.resolve().relative_to(top.resolve()).as_posix())
    cmd = [sys.executable, "-m", "jupyter", "lab", f"--ServerApp.root_dir={top}",
           f"--LabApp.default_url={start_url}", *jupyter_args]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")  # containers often run as root; Jupyter refuses it otherwise
    env = dict(os.environ)
    course_environment(env)
    print(f"opening JupyterLab at your copy of lesson 00 ({lesson})")
    return subprocess.call(cmd, cwd=top, env=env)
