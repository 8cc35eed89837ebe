"""The course's Jupyter server settings (course_utils/jupyter/lab_config/), read by Jupyter's own
config loader as a server reads them: `course` first on PATH for kernels and terminals, a terminal
shell that does not reset PATH, and the page CSS served from the course's folder after the
learner's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from course_utils.jupyter.hub import LAB_CONFIG, course_environment

READ = """
import json, os
from traitlets.config.loader import PyFileConfigLoader
c = PyFileConfigLoader("jupyter_server_config.py", path=[{folder!r}]).load_config()
print(json.dumps({{"PATH": os.environ["PATH"], "terminado": c.ServerApp.terminado_settings,
                  "custom_css": c.LabApp.custom_css,
                  "static": c.ServerApp.tornado_settings["static_custom_path"]}}))
"""


def read_config(env: dict) -> dict:
    done = subprocess.run([sys.executable, "-c", READ.format(folder=str(LAB_CONFIG))], env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout)


def test_the_server_settings_put_course_first_and_keep_the_terminal_from_resetting_path(tmp_path):
    tools = str(Path(sys.executable).parent)
    base = {"HOME": str(tmp_path), "JUPYTER_CONFIG_DIR": str(tmp_path / "mine")}
    got = read_config({**base, "PATH": f"/usr/bin{os.pathsep}{tools}{os.pathsep}/bin", "SHELL": "/bin/zsh"})
    assert got["PATH"].split(os.pathsep) == [tools, "/usr/bin", "/bin"]  # first, once
    assert got["terminado"] == {"shell_command": ["/bin/zsh"]}  # the user's shell, no login `-l`
    assert got["custom_css"] is True
    assert got["static"] == [str(tmp_path / "mine" / "custom"), str(LAB_CONFIG / "custom")]
    css = (LAB_CONFIG / "custom" / "custom.css").read_text()
    assert "word-break: normal" in css and "Run this cell again" in css
    without_shell = read_config({**base, "PATH": "/usr/bin"})
    assert without_shell["terminado"]["shell_command"][0].endswith("sh")


def test_course_environment_puts_the_settings_and_the_tools_first_once():
    env = {"PATH": f"/bin{os.pathsep}{Path(sys.executable).parent}", "JUPYTER_CONFIG_PATH": "/etc/mine"}
    course_environment(env)
    course_environment(env)  # idempotent: a launcher run twice adds nothing twice
    assert env["PATH"].split(os.pathsep) == [str(Path(sys.executable).parent), "/bin"]
    assert env["JUPYTER_CONFIG_PATH"].split(os.pathsep) == [str(LAB_CONFIG), "/etc/mine"]
