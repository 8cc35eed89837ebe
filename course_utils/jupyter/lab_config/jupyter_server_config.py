"""The course's settings for a Jupyter server (JupyterLab, or a JupyterHub learner's server).

Jupyter reads this file because its folder is on ``JUPYTER_CONFIG_PATH``: ``course lab`` and the
JupyterHub launcher (``course_utils/jupyter/hub.py prepare``) put it there. It runs in the server's
process before anything starts, with the standard library and jupyter_core only, and a setting the
learner made in their own Jupyter config (``jupyter --config-dir``) wins over each one here:

- the server's Python environment (``sys.executable``'s folder, where ``course`` is) comes first on
  PATH, so ``!course ...`` in a notebook cell finds it: kernels and terminals inherit the server's
  environment, whatever PATH the lab was started from;
- a JupyterLab terminal runs the user's shell (``$SHELL``, else ``sh``) as JupyterLab does when it
  is started from a terminal: without ``-l``. jupyter_server_terminals starts a login shell when
  the server's output is not a terminal (a launcher script, a JupyterHub spawner), and a login
  shell's profile (``/etc/profile``) sets PATH anew, which would drop the course's environment;
- JupyterLab loads the page's ``custom/custom.css`` (``LabApp.custom_css``) from the course's
  ``custom/`` folder beside this file (after the learner's own ``<config dir>/custom/``, which wins
  where it has a custom.css): printed reports wrap at word boundaries, and a widget whose kernel
  state is gone says to run its cell again.
"""

import os
import shutil
import sys

from jupyter_core.paths import jupyter_config_dir

c = get_config()  # noqa: F821 - provided by Jupyter's config loader

_tools = os.path.dirname(sys.executable)
_path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p]
os.environ["PATH"] = os.pathsep.join([_tools, *(p for p in _path if p != _tools)])

_shell = os.environ.get("SHELL") or shutil.which("sh") or "/bin/sh"
c.ServerApp.terminado_settings = {"shell_command": [_shell]}

c.LabApp.custom_css = True
# jupyter_server's default is the learner's own folder, then a "custom" folder of its static files
# that jupyter_server 2 does not ship; the course's folder takes that place.
_custom = [os.path.join(jupyter_config_dir(), "custom"),
           os.path.join(os.path.dirname(os.path.abspath(__file__)), "custom")]
c.ServerApp.tornado_settings = {"static_custom_path": _custom}  # what /custom/ serves (web app setting)
