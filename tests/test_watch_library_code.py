"""``course watch`` judges the user's code, not an installed library's: a data transform inside
site-packages (torchvision's Normalize builds its mean and std with ``torch.as_tensor(...,
device=...)`` at every sample) is not the user's host copy, while the same lines in the user's
own loop are named, at the user's line."""

from __future__ import annotations

import importlib.util
import sys
import textwrap

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.toolkit.watch import watch

TRANSFORM = textwrap.dedent("""\
    import torch

    def normalize(x, mean, std):
        mean = torch.as_tensor(mean, dtype=x.dtype, device=x.device)
        std = torch.as_tensor(std, dtype=x.dtype, device=x.device)
        return (x - mean) / std
""")


def library_transform(tmp_path):
    """``normalize`` from a module installed in a site-packages folder."""
    folder = tmp_path / "lib" / "python3" / "site-packages" / "fakevision"
    folder.mkdir(parents=True)
    (folder / "transforms.py").write_text(TRANSFORM)
    spec = importlib.util.spec_from_file_location("fakevision_transforms", folder / "transforms.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.normalize


def own_normalize(x, mean, std):
    mean = torch.as_tensor(mean, dtype=x.dtype, device=x.device)  # own copy
    std = torch.as_tensor(std, dtype=x.dtype, device=x.device)
    return (x - mean) / std


def train(normalize, steps: int = 8) -> list:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = torch.randn(16, 6), torch.randn(16, 1)
    with watch(verbose=False, deep_every=1) as w:
        for _ in range(steps):
            loss = F.mse_loss(model(normalize(x, [0.1] * 6, [0.9] * 6)), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return [f for f in w.findings if "as_tensor(host data" in f.what]


def test_a_librarys_transform_is_not_the_users_host_copy(tmp_path):
    assert train(library_transform(tmp_path)) == []


def test_the_same_line_in_the_users_code_is_named_at_that_line():
    found = train(own_normalize)
    assert found and found[0].where.file == "test_watch_library_code.py"
    assert "own copy" in found[0].where.code


def test_a_library_pip_installed_into_a_folder_on_the_path_is_a_library_too(tmp_path, monkeypatch):
    """``pip install --target DIR`` and DIR on PYTHONPATH: no site-packages in the path, but a
    ``*.dist-info`` beside the package says it is installed, not the user's."""
    from course_utils.toolkit.watch import findings

    folder = tmp_path / "vendored"
    (folder / "fakevision2").mkdir(parents=True)
    (folder / "fakevision2-1.0.dist-info").mkdir()
    (folder / "fakevision2" / "transforms.py").write_text(TRANSFORM)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setattr(findings, "_PREFIXES", findings._internal_prefixes())
    monkeypatch.setattr(findings, "_INTERNAL", {})
    source = folder / "fakevision2" / "transforms.py"
    spec = importlib.util.spec_from_file_location("fakevision2_transforms", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert train(module.normalize) == []
    (folder / "fakevision2-1.0.dist-info").rmdir()  # the same folder, nothing installed: the user's
    monkeypatch.setattr(findings, "_PREFIXES", findings._internal_prefixes())
    monkeypatch.setattr(findings, "_INTERNAL", {})
    assert train(module.normalize) != []
