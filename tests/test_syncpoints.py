"""Does find_sync_points list every host read of a device tensor, with the user's line, and nothing else?"""

import copy
import inspect
import linecache
import pickle

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import _get_current_dispatch_mode

from course_utils.labs import sync_lab
from course_utils.labs.case_inputs import make_loop
from course_utils.toolkit.syncs.finder import KINDS, find_sync_points
from course_utils.toolkit.timing import sync


def lesson_loop_report():
    return find_sync_points(sync_lab.leaky_loop, sync_lab.classifier_head(), sync_lab.pooled_batches())


def test_the_tool_finds_every_sync_point_planted_in_the_lesson_loop_and_no_others(capsys):
    report = lesson_loop_report()
    found = {(g.where.line, g.kind) for g in report.groups()}
    assert found == sync_lab.planted_sync_points()
    assert len(found) == 6


def test_each_planted_line_is_counted_once_per_step_that_runs_it(capsys):
    steps = len(sync_lab.pooled_batches())
    counts = {g.kind: g.count for g in lesson_loop_report().groups()}
    assert counts.pop("print") == steps // 2  # printed on even steps only
    assert set(counts.values()) == {steps}


def test_the_loop_runs_as_usual_under_the_tool(capsys):
    plain = sync_lab.leaky_loop(sync_lab.classifier_head(), sync_lab.pooled_batches())
    watched = lesson_loop_report().result
    assert watched == plain
    assert capsys.readouterr().out.count("misclassified") == 4


def one_read(code: str):
    """Run a statement with x (2x3), s (scalar), y (labels) as device tensors; return the kinds."""

    def fn(x, s, y):
        exec(code, {"torch": torch, "np": np, "F": F}, {"x": x, "s": s, "y": y})

    report = find_sync_points(fn, torch.arange(6.0).reshape(2, 3), torch.tensor(2.5), torch.tensor([0, 1]))
    return [p.kind for p in report.points]


@pytest.mark.parametrize("code, kinds", [
    ("s.item()", ["item"]), ("float(s)", ["item"]), ("int(s)", ["item"]),
    ("[0, 1, 2][y[1]]", ["item"]), ("x.tolist()", ["tolist"]), ("x.numpy()", ["numpy"]),
    ("np.asarray(x)", ["numpy"]), ("x.cpu()", ["to host"]), ("x.to('cpu')", ["to host"]),
    ("torch.empty(2, 3).copy_(x)", ["to host"]), ("str(x)", ["print"]), ("f'{s:.2f}'", ["print"]),
    ("repr(s)", ["print"]), ("bool(s > 1)", ["bool"]), ("1 if s > 1 else 0", ["bool"]),
    ("torch.equal(x, x)", ["bool"]), ("x[x > 2]", ["data-dependent shape"]),
    ("x.nonzero()", ["data-dependent shape"]), ("torch.masked_select(x, x > 2)", ["data-dependent shape"]),
    ("z = x.clone(); z[z > 2] = 0", ["data-dependent shape"]),
    ("x.cpu().numpy()", ["to host"]), ("x.cpu().tolist()", ["to host"]),
])
def test_each_kind_of_host_read_is_recognised_once(code, kinds):
    assert one_read(code) == kinds
    assert set(kinds) <= set(KINDS)


@pytest.mark.parametrize("code", [
    "x + 1", "x.detach()", "x.view(-1)", "x[:, 0]", "x[torch.tensor([0])]", "x.masked_fill(x > 2, 0)",
    "torch.where(x > 2, x, 0)", "x.to(x.device)", "x.to(torch.float64)", "len(x)", "x.shape",
    "torch.tensor(3.0).item()", "print(torch.ones(2))", "x.sum() / s", "s.clamp(max=1.0)",
])
def test_device_work_and_host_tensors_are_not_sync_points(code, capsys):
    assert one_read(code) == []


def test_clip_grad_norm_moves_norms_between_devices_without_syncing():
    model = nn.Linear(4, 2)

    def step(model, x):
        model(x).sum().backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)

    assert len(find_sync_points(step, model, torch.randn(3, 4))) == 0


def test_a_sync_names_the_users_file_line_function_and_code():
    def logs(loss):
        value = loss.item()
        return value

    (point,) = find_sync_points(logs, torch.tensor(1.0)).points
    lines, first = inspect.getsourcelines(logs)
    assert point.where.file == "test_syncpoints.py"
    assert point.where.function == "logs"
    assert point.where.line == first + 1
    assert point.where.code == "value = loss.item()"
    assert str(point.where) == f"test_syncpoints.py:{first + 1} in logs"


def test_an_explicit_sync_counts_also_on_cpu():
    def fn(x):
        y = x * 2
        sync("cpu")
        return y

    assert [p.kind for p in find_sync_points(fn, torch.ones(2)).points] == ["synchronize"]


def test_the_report_groups_points_and_prints_a_table(capsys):
    report = lesson_loop_report()
    text = str(report)
    assert text.startswith("22 sync points at 6 places")
    assert "leaky_loop" in text and "loss.item()" in text
    assert report.count() == 22 and report.count("print") == 2
    assert sum(report.by_line().values()) == 22
    assert report.ops > 0


def test_no_mode_is_left_behind_even_when_the_function_raises():
    def boom(x):
        x.item()
        raise ValueError("boom")

    with pytest.raises(ValueError):
        find_sync_points(boom, torch.ones(()))
    assert _get_current_dispatch_mode() is None
    assert not torch._C._is_torch_function_mode_enabled()


def test_empty_report_says_so():
    report = find_sync_points(lambda x: x + 1, torch.ones(2))
    assert len(report) == 0 and str(report).startswith("no sync points")
    assert torch.equal(report.result, torch.full((2,), 2.0))


def test_active_watches_lists_the_running_watchers_outermost_first():
    from course_utils.toolkit.emulate.async_queue import AsyncDevice
    from course_utils.toolkit.syncs.finder import SyncWatch, active_watches

    assert active_watches() == ()
    with SyncWatch() as outer, AsyncDevice() as inner:
        assert active_watches() == (outer, inner)
    assert active_watches() == ()


def test_a_generated_loop_shows_its_source_and_finds_its_syncs_like_a_function():
    loop = make_loop(["history.append(loss.item())", "kept.append(loss.detach())"], "loop: two lines")
    lines, first = inspect.getsourcelines(loop)
    assert lines[0] == "def loop(model, batches):\n" and lines[-3:-1] == [
        "        history.append(loss.item())\n", "        kept.append(loss.detach())\n"]
    assert loop.__code__.co_firstlineno == first and loop.__name__ == "loop"
    model, batches = nn.Linear(4, 3), [(torch.randn(6, 4), torch.tensor([0, 1, 2, 0, 1, 2]))] * 2
    report = find_sync_points(loop, model, batches)
    assert [(p.kind, p.where.line - first + 1) for p in report.points] == [("item", 12)] * 2
    assert report.points[0].where.file == "<loop: two lines>"
    assert len(report.result) == 2 and copy.deepcopy(loop) is loop


def test_a_generated_loop_is_compiled_again_where_its_pickle_is_loaded():
    loop = make_loop(["picked = x[y == 0]"], "loop: pickled")
    blob = pickle.dumps(loop)
    linecache.cache.pop("<loop: pickled>")  # as in another process, which never saw its source
    again = pickle.loads(blob)
    assert again is not loop and again.statements == ("picked = x[y == 0]",)
    assert inspect.getsource(again) == inspect.getsource(loop)
    assert repr(again) == "<generated loop 'loop: pickled'>"
