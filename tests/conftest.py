"""Shared test setup: nothing a test does may touch the real user's progress or $HOME."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent

# Kernels started by tests (nbclient, nbval) inherit these; set once, before any kernel starts.
_SCRATCH = Path(tempfile.mkdtemp(prefix="mps-detective-tests-"))
atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)
for _var in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR",
             "MPLCONFIGDIR"):
    os.environ.setdefault(_var, str(_SCRATCH / _var.lower()))
os.environ.setdefault("MPS_DETECTIVE_HOME", str(_SCRATCH / "progress"))
os.environ.pop("MPLBACKEND", None)

# The two pytest workers already share the machine's cores: torch's own thread pool on top of
# them only adds waiting, many times the work on a busy machine (tensors in tests are small).
# Kernels and subprocesses that tests start keep torch's default.
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def progress_home(tmp_path, monkeypatch) -> Path:
    """Each test gets an empty progress folder."""
    home = tmp_path / "progress-home"
    monkeypatch.setenv("MPS_DETECTIVE_HOME", str(home))
    return home


@pytest.fixture
def isolated_jupyter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernels read and write only temporary folders, never the user's Jupyter setup."""
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR",
                 "MPLCONFIGDIR"):
        folder = tmp_path / "env" / name.lower()
        folder.mkdir(parents=True)
        monkeypatch.setenv(name, str(folder))
