"""Does the memory toolkit of lesson 02 measure what it says, and retry only what it should?"""

import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_utils.labs.case_inputs import SimulatedOOMStep
from course_utils.toolkit import memory
from course_utils.toolkit.memory import (
    TOLERANCE,
    MinBatchOutOfMemoryError,
    SavedTensors,
    TinyIssueClassifier,
    distinct_storage_bytes,
    graph_saved_bytes,
    is_out_of_memory,
    measure,
    optimizer_state_bytes,
    retry_on_oom,
    saved_bytes,
    snapshot,
    storage_bytes,
    tensor_bytes,
    tracking,
    training_step_breakdown,
)
from tests.conftest import ROOT

OPTIMIZERS = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1),
    "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    "adam": lambda p: torch.optim.Adam(p),
    "adamw": lambda p: torch.optim.AdamW(p),
    "adam_amsgrad": lambda p: torch.optim.Adam(p, amsgrad=True),
}


def test_is_the_lesson_batch_12_mib_and_a_slice_the_size_of_its_whole_storage():
    assert tensor_bytes((32, 128, 768), torch.float32) == 12 * 2**20
    assert tensor_bytes((), torch.float16) == 2
    x = torch.zeros(10, 10)
    assert storage_bytes(x[:, :1]) == 400


def test_does_a_cpu_snapshot_label_every_counter_and_report_this_process():
    snap = snapshot("cpu")
    assert all(c.counts for c in snap.counters)
    if sys.platform.startswith("linux"):
        assert snap["process resident set size"] > 10 * 2**20
    assert "memory counters on cpu" in str(snap)
    with pytest.raises(KeyError):
        snap["no such counter"]


@pytest.mark.parametrize("device", ["mps", "cuda"])
def test_does_a_snapshot_of_a_missing_device_answer_none_instead_of_raising(device):
    if device == "mps" and torch.backends.mps.is_available() or (
            device == "cuda" and torch.cuda.is_available()):
        pytest.skip("the device exists here")
    snap = snapshot(device)
    assert snap.counters and all(c.bytes is None for c in snap.counters)


def test_does_measure_count_a_new_tensor_as_peak_and_retained():
    m = measure(lambda: torch.zeros(1000), device="cpu")
    assert (m.peak_bytes, m.retained_bytes) == (4000, 4000)
    assert m.result.shape == (1000,) and m.allocator == {}


def test_does_measure_count_a_temporary_in_the_peak_only():
    m = measure(lambda: (torch.ones(1000) + 1) * 2, device="cpu")
    assert (m.peak_bytes, m.retained_bytes) == (8000, 4000)


def test_are_views_and_in_place_results_of_existing_tensors_not_counted():
    x = torch.zeros(100, 100)

    def work():
        x.add_(1)
        return x.t()[:5]

    m = measure(work, device="cpu")
    assert (m.peak_bytes, m.retained_bytes) == (0, 0)


def test_are_sparse_and_meta_results_skipped_without_error():
    m = measure(lambda: (torch.eye(4).to_sparse(), torch.empty(100, device="meta")), device="cpu")
    assert m.peak_bytes == 64  # only the dense eye(4) that to_sparse() started from


def test_does_tracking_see_the_gradients_backward_creates():
    model = nn.Linear(50, 40)
    loss = model(torch.randn(8, 50)).square().sum()
    with tracking("cpu") as tracker:
        loss.backward()
    grad_bytes = sum(p.grad.nbytes for p in model.parameters())
    assert tracker.live_bytes == grad_bytes
    assert tracker.peak_bytes >= grad_bytes


@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_does_the_state_rule_match_the_state_the_optimizer_really_keeps(kind, dtype):
    model = nn.Sequential(nn.Linear(12, 8), nn.Linear(8, 3)).to(dtype)
    model[0].requires_grad_(False)
    optimizer = OPTIMIZERS[kind](model.parameters())
    model(torch.randn(4, 12, dtype=dtype)).float().sum().backward()
    optimizer.step()
    counted = sum(t.nbytes for s in optimizer.state.values() for t in s.values() if torch.is_tensor(t))
    assert optimizer_state_bytes(optimizer)[0] == counted


def test_is_an_optimizer_without_a_rule_refused():
    with pytest.raises(TypeError, match="RMSprop"):
        optimizer_state_bytes(torch.optim.RMSprop(nn.Linear(2, 2).parameters()))


def test_does_saved_bytes_count_a_storage_saved_twice_once_and_skip_excluded_ones():
    x = torch.randn(10, 10, requires_grad=True)
    assert saved_bytes(lambda: x * x) == 400
    assert saved_bytes(lambda: x.exp()) == 400
    assert saved_bytes(lambda: x * x, exclude=[x]) == 0
    assert saved_bytes(lambda: x.sum()) == 0


def test_does_each_storage_count_once_and_whole_and_is_every_save_recorded():
    x = torch.zeros(10, 10)
    assert distinct_storage_bytes([x, x[:, :1], x.t()]) == 400  # three views, one storage
    assert distinct_storage_bytes([x, torch.zeros(3)], exclude=[x[0]]) == 12
    leaf = torch.randn(4, 8, requires_grad=True)
    with SavedTensors() as saved:
        leaf * leaf
        leaf[:, :2].sin()
    assert saved.bytes == 128 and len({s.storage for s in saved.saves}) == 1
    assert [(s.storage_bytes, s.view_bytes) for s in saved.saves] == [(128, 128), (128, 128), (128, 32)]


def test_does_a_kept_output_hold_its_graphs_saved_tensors_and_no_grad_none():
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 2))
    x = torch.randn(4, 8)
    kept = graph_saved_bytes([model(x)], exclude=list(model.parameters()))
    assert kept == 4 * 8 * 4 + 4 * 16 * 4  # the input; tanh's output, which is also layer 2's input
    with torch.no_grad():
        assert graph_saved_bytes([model(x)]) == 0


def test_is_there_one_memory_accounting_with_one_meaning_per_name():
    from course_utils.drills import memory as drill_memory

    assert drill_memory.saved_activation_bytes is saved_bytes  # lesson 07's name for the same count
    assert drill_memory.MiB == memory.MiB and not hasattr(drill_memory, "tensor_bytes")
    torch.manual_seed(0)
    model = nn.Linear(6, 5)
    parts = drill_memory.training_footprint(model, torch.optim.Adam(model.parameters()), torch.randn(3, 6))
    weights = distinct_storage_bytes(model.parameters())
    assert parts["weights"] == parts["gradients"] == weights == 35 * 4
    assert parts["optimizer state"] == 2 * weights  # exp_avg and exp_avg_sq; step counters are scalars


def _breakdown(kind, batch=8, tokens=32):
    torch.manual_seed(0)
    model = TinyIssueClassifier()
    optimizer = OPTIMIZERS[kind](model.parameters())
    data = (torch.randn(batch, tokens, 64), torch.randint(0, 3, (batch,)))
    return model, optimizer, training_step_breakdown(model, optimizer, data, F.cross_entropy)


@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
@pytest.mark.parametrize("shape", [(8, 32), (16, 64), (64, 4), (2, 128), (4, 256), (1, 1024)])
def test_is_the_estimate_within_the_stated_tolerance_of_the_measured_peak(kind, shape):
    _, _, bd = _breakdown(kind, *shape)
    assert abs(bd.measured_peak / bd.estimate - 1) <= TOLERANCE, bd.table()
    assert bd.agrees


def test_do_the_breakdown_parts_match_what_the_step_left_behind():
    model, optimizer, bd = _breakdown("adam")
    params = list(model.parameters())
    assert bd["weights"] == sum(p.nbytes for p in params)
    assert bd["gradients"] == sum(p.grad.nbytes for p in params)
    assert bd["optimizer state"] == sum(t.nbytes for s in optimizer.state.values() for t in s.values())
    assert bd["activations"] > bd["working space"] > 0 and bd["batch"] == 8 * 32 * 64 * 4 + 8 * 8
    assert "within ±20%: True" in bd.table()


def test_does_halving_the_sequence_save_more_than_halving_the_batch_with_attention():
    base, half_batch, half_len = (_breakdown("sgd", b, t)[2]["activations"]
                                  for b, t in ((4, 128), (2, 128), (4, 64)))
    assert half_batch == pytest.approx(base / 2, rel=0.01)
    assert half_len < half_batch


def test_does_the_chart_draw_a_bar_per_part_and_breakdown():
    import matplotlib

    matplotlib.use("Agg", force=True)
    bds = [_breakdown(kind)[2] for kind in ("sgd", "adam")]
    ax = memory.plot_breakdowns(bds)
    assert len(ax.patches) == len(memory.COLORS) * 2
    assert [t.get_text() for t in ax.get_xticklabels()] == ["SGD", "Adam"]
    assert memory.draw_memory_models().patches


class FakeStep:
    """Runs out of memory (as MPS words it, or as torch.OutOfMemoryError) above ``fits`` rows."""

    def __init__(self, fits, mps_style=False):
        self.fits, self.mps_style, self.sizes = fits, mps_style, []

    def __call__(self, chunk):
        self.sizes.append(len(chunk))
        if len(chunk) > self.fits:
            if self.mps_style:
                raise RuntimeError("MPS backend out of memory (emulated)")
            raise torch.OutOfMemoryError("out of memory (emulated)")
        return chunk.sum().item()


@pytest.mark.parametrize("mps_style", [False, True])
def test_does_retry_halve_then_cover_every_row_exactly_once(mps_style, monkeypatch):
    emptied = []
    monkeypatch.setattr(memory, "empty_cache", lambda device=None: emptied.append(device) or "emptied")
    step = FakeStep(fits=3, mps_style=mps_style)
    out = retry_on_oom(step, torch.arange(10.0), device="cpu")
    assert step.sizes == [10, 5, 2, 2, 2, 2, 2]
    assert sum(out.results) == sum(range(10)) and out.batch_size == 2 and out.ooms == 2
    assert len(emptied) == 2


def test_does_retry_keep_tuples_together_and_respect_min_batch():
    seen = []

    def step(chunk):
        x, y = chunk
        seen.append((len(x), len(y)))
        if len(x) > 4:
            raise torch.OutOfMemoryError("out of memory (emulated)")
        return len(x)

    out = retry_on_oom(step, (torch.zeros(12, 3), torch.zeros(12)), min_batch=4, device="cpu")
    assert seen[:2] == [(12, 12), (6, 6)] and out.results == [4, 4, 4]


def test_does_retry_pass_other_errors_through_untouched():
    err = ValueError("labels out of range")

    def step(chunk):
        raise err

    with pytest.raises(ValueError) as info:
        retry_on_oom(step, torch.zeros(8), device="cpu")
    assert info.value is err


def test_does_retry_raise_a_clear_error_when_even_min_batch_fails():
    with pytest.raises(MinBatchOutOfMemoryError, match="batch size 2") as info:
        retry_on_oom(FakeStep(fits=0), torch.zeros(16), min_batch=2, device="cpu")
    assert is_out_of_memory(info.value.__cause__)
    with pytest.raises(ValueError):
        retry_on_oom(FakeStep(fits=0), torch.zeros(16), min_batch=0, device="cpu")


def test_does_retrying_with_accumulation_give_the_full_batch_gradient():
    torch.manual_seed(0)
    model, x, y = nn.Linear(6, 3), torch.randn(16, 6), torch.randint(0, 3, (16,))
    F.cross_entropy(model(x), y).backward()
    full = model.weight.grad.clone()
    model.zero_grad()

    def step(chunk):
        cx, cy = chunk
        if len(cx) > 5:
            raise torch.OutOfMemoryError("out of memory (emulated)")
        (F.cross_entropy(model(cx), cy) * len(cx) / len(x)).backward()

    retry_on_oom(step, (x, y), device="cpu")
    torch.testing.assert_close(model.weight.grad, full)


def test_which_errors_count_as_out_of_memory():
    assert is_out_of_memory(torch.OutOfMemoryError("CUDA out of memory"))
    assert is_out_of_memory(RuntimeError("MPS backend out of memory (MPS allocated: 0 bytes)"))
    assert not is_out_of_memory(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))
    assert not is_out_of_memory(ValueError("out of memory"))


def test_does_empty_cache_do_nothing_harmful_where_there_is_no_cache():
    assert "nothing" in memory.empty_cache("cpu")
    if not torch.backends.mps.is_available():
        assert "unavailable" in memory.empty_cache("mps")


def test_are_the_watermark_defaults_those_of_the_fact_sheet():
    defaults = {w.name: w.default for w in memory.WATERMARKS}
    assert defaults["PYTORCH_MPS_HIGH_WATERMARK_RATIO"] == "1.7"
    assert defaults["PYTORCH_MPS_LOW_WATERMARK_RATIO"].startswith("1.4")


@pytest.mark.slow
def test_does_importing_the_memory_module_leave_matplotlib_unloaded():
    code = "import sys, course_utils.toolkit.memory; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("kind", ["cuda", "mps"])
def test_does_the_simulated_step_run_out_of_memory_as_the_backend_would(kind):
    step = SimulatedOOMStep(fits=8, kind=kind)
    assert step(8) == "trained on 8 rows"
    with pytest.raises(torch.OutOfMemoryError if kind == "cuda" else RuntimeError) as info:
        step(9)
    assert is_out_of_memory(info.value) and "emulated" in str(info.value)
    assert step.calls == [8, 9]


def test_does_the_simulated_step_raise_other_errors_and_stop_a_runaway_retry():
    with pytest.raises(ValueError, match="labels"):
        SimulatedOOMStep(64, other=ValueError("labels out of range"))(1)
    step = SimulatedOOMStep(fits=0)
    for _ in range(60):
        with pytest.raises(torch.OutOfMemoryError):
            step(1)
    with pytest.raises(RecursionError, match="never stops"):
        step(1)
    with pytest.raises(ValueError, match="kind"):
        SimulatedOOMStep(1, kind="rocm")
