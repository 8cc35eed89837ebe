"""Do the timing helpers measure what they claim: launch vs finish, honest medians, marked output?

These tests check states (what is still queued, what each clock reading waited for) and read a
fake clock where a duration matters, so a loaded machine cannot fail them; how much faster or
slower something measures is reported by tests/benchmarks/bench.py, not asserted here."""

import logging
import os
import re
import subprocess
import sys
import threading
import time

import pytest
import torch

from course_utils.labs import sync_lab
from course_utils.labs.case_inputs import FakeDevice
from course_utils.toolkit import timing
from course_utils.toolkit.emulate.async_queue import AsyncDevice
from tests.conftest import ROOT


def test_sync_on_cpu_waits_for_nothing_but_counts_as_a_sync_point(monkeypatch):
    waited, noted = [], []
    monkeypatch.setattr(torch.accelerator, "synchronize", lambda *args: waited.append(args))
    monkeypatch.setattr(timing, "note_sync", noted.append)
    for device in ("cpu", torch.device("cpu"), None, "meta"):
        assert timing.sync(device) is None
    assert waited == [], "sync on a CPU must not touch an accelerator"
    assert noted == ["synchronize"] * 4, "every sync is reported to sync-point watchers"


@pytest.mark.skipif(torch.accelerator.is_available(), reason="this machine has an accelerator")
def test_sync_refuses_an_accelerator_this_machine_does_not_have():
    with pytest.raises(RuntimeError, match="cannot synchronize cuda"):
        timing.sync("cuda")


def test_the_naive_timer_times_one_call_without_warm_up():
    calls = []
    seconds = timing.naive_time(lambda: calls.append(time.sleep(0.02)))
    assert calls == [None] and seconds >= 0.02


def heavy_forward(dev):
    model, x = dev.put(sync_lab.issue_classifier()), dev.put(sync_lab.issue_batch())

    def forward():
        with torch.no_grad():
            return model(x)

    return forward


def hold(dev: AsyncDevice) -> threading.Event:
    """Queue a kernel that blocks the device until the returned event is set."""
    gate = threading.Event()
    dev._submit("gate", lambda: gate.wait(600))  # 600 s: only a test that never opens it
    return gate


class FakeClock:
    """Stands in for ``timeit.default_timer``: time moves only when a timed call says so."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def spend(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(timing.timeit, "default_timer", fake)
    return fake


@pytest.mark.slow
def test_on_the_emulated_device_the_naive_timer_returns_while_the_work_is_still_queued():
    with AsyncDevice() as dev:
        forward = heavy_forward(dev)
        forward()
        dev.synchronize()
        gate = hold(dev)  # the device cannot run anything until the gate opens
        waits_before = [s for s in dev.spans if s.kind == "wait"]
        try:
            timing.naive_time(forward)
            queued = dev.pending()
            waits = [s for s in dev.spans if s.kind == "wait"]
        finally:
            gate.set()
    assert queued > 1, "the naive timer returned only after the forward's kernels ran"
    assert waits == waits_before, "the naive timer waited for the device"


@pytest.mark.slow
def test_on_the_emulated_device_every_benchmark_clock_reading_comes_after_the_device_drained(
        monkeypatch):
    with AsyncDevice() as dev:
        forward = heavy_forward(dev)
        pending_at_reading = []

        def reading() -> float:
            pending_at_reading.append(dev.pending())
            return time.perf_counter()

        monkeypatch.setattr(timing.timeit, "default_timer", reading)
        timing.benchmark(forward, dev, min_run_time=0.05)
    assert len(pending_at_reading) >= 4  # the block-size estimate and at least one timed block
    assert set(pending_at_reading) == {0}, "the honest timer read its clock with work still queued"


def test_benchmark_is_built_on_torch_utils_benchmark_timer(monkeypatch, clock):
    seen = []
    real = timing.Timer

    class Spy(real):
        def blocked_autorange(self, *args, **kwargs):
            seen.append(kwargs)
            return super().blocked_autorange(*args, **kwargs)

    monkeypatch.setattr(timing, "Timer", Spy)
    result = timing.benchmark(lambda: clock.spend(0.002), min_run_time=0.05, label="spend")
    assert seen == [{"min_run_time": 0.05}]
    assert result.median == pytest.approx(0.002) and result.iqr == pytest.approx(0, abs=1e-12)
    assert result.runs >= 25  # blocks of calls until 0.05 s of the fake clock have passed
    assert result.label == "spend"


def test_benchmark_warms_up_so_a_slow_first_call_does_not_count(monkeypatch, clock):
    calls, calls_before_timing = [], []
    real = timing.Timer

    class Spy(real):
        def __init__(self, *args, **kwargs):
            calls_before_timing.append(len(calls))
            super().__init__(*args, **kwargs)

    def fn():
        calls.append(1)
        clock.spend(0.3 if len(calls) == 1 else 0.002)

    monkeypatch.setattr(timing, "Timer", Spy)
    result = timing.benchmark(fn, warmup=1, min_run_time=0.05)
    assert calls_before_timing == [1], "the warm-up call must come before the timer starts"
    assert result.median == pytest.approx(0.002)


def test_launch_and_finish_orders_the_two_times():
    with AsyncDevice() as dev:
        run = timing.launch_and_finish(heavy_forward(dev), dev)
        assert dev.pending() == 0  # "finish": it returned once the device had drained
    assert 0 < run.naive < run.synced  # two readings of one clock from one start, in order


def test_measured_durations_are_marked_and_the_lesson_sanitizer_masks_only_them():
    assert timing.fmt_time(0.0312) == "⏱ 31.2 ms"
    assert timing.fmt_time(2.5e-6) == "⏱ 2.5 µs"
    assert timing.fmt_time(1.5) == "⏱ 1.5 s"
    text = str(timing.Timing(median=0.0312, iqr=0.0004, runs=17, label="forward"))
    assert text == "forward: ⏱ median 31.2 ms, IQR 400 µs, 17 runs"
    regex, replace = _sanitizer("03-timings")
    sample = f"naive:        {timing.fmt_time(0.003)}\nsynchronized / naive: True\n"
    assert re.sub(regex, replace, sample) == f"naive:        {replace}\nsynchronized / naive: True\n"


def _sanitizer(name: str) -> tuple[str, str]:
    """The regex and replacement of one section of the lessons' nbval sanitizer."""
    config = (ROOT / "tests" / "nbval_sanitize.cfg").read_text(encoding="utf-8")
    section = config.split(f"[{name}]", 1)[1].split("\n[", 1)[0]
    assert section.isascii()  # nbval reads the file in the locale's encoding
    regex = re.search(r"^regex: (.*)$", section, re.M).group(1)
    return regex, re.search(r"^replace: (.*)$", section, re.M).group(1)


def test_the_sanitizer_drops_the_builds_local_tag_and_keeps_the_version():
    regex, replace = _sanitizer("torch-local-version")
    cases = {"[OK] torch: 2.13.0+cu130": "[OK] torch: 2.13.0",
             "torch 2.14.1+cpu | device": "torch 2.14.1 | device",
             "2.6.0+rocm6.1 here": "2.6.0 here", "torch 2.13.0 here": "torch 2.13.0 here",
             "x12.13.0+cpu": "x12.13.0+cpu"}
    assert {text: re.sub(regex, replace, text) for text in cases} == cases


def test_torchs_extension_builder_note_on_cuda_home_is_dropped_and_its_other_messages_pass(caplog):
    logger = logging.getLogger("torch.utils.cpp_extension")
    logger.warning("No CUDA runtime is found, using CUDA_HOME='/usr/local'")
    assert not caplog.records
    logger.warning("Error checking compiler version for c++")
    assert [r.getMessage() for r in caplog.records] == ["Error checking compiler version for c++"]


# A CUDA build of torch (PyPI's Linux wheel) on a machine with a CUDA toolkit and no GPU.
CUDA_BUILD_WITHOUT_GPU = """import torch
torch.cuda._is_compiled = lambda: True
torch.cuda.is_available = lambda: False
torch.version.cuda = "13.0"
"""


def test_a_lesson_importing_torchs_benchmark_after_the_course_shows_no_note_on_stderr(tmp_path):
    """Lesson 04 imports ``torch.utils.benchmark`` itself, after the course has been imported."""
    lesson = "from torch.utils import benchmark\nprint('ok')"
    env = {**os.environ, "CUDA_HOME": str(tmp_path)}

    def run(code: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                              timeout=300, cwd=ROOT)

    assert "No CUDA runtime is found" in run(CUDA_BUILD_WITHOUT_GPU + lesson).stderr  # torch alone
    done = run("import course_utils.toolkit.device\n" + CUDA_BUILD_WITHOUT_GPU + lesson)
    assert done.stdout.strip() == "ok" and done.stderr == "", done.stderr


@pytest.mark.skipif(torch.accelerator.is_available(), reason="this machine has an accelerator")
def test_events_need_mps_or_cuda():
    assert timing.event_time(lambda: None, "cpu") is None
    assert timing.event_time(lambda: None, "cuda") is None


def test_open_device_gives_the_emulated_device_on_cpu():
    with timing.open_device("cpu") as dev:
        assert isinstance(dev, AsyncDevice) and dev.label == "emulated"
        assert dev.put(torch.ones(2)).sum().item() == 2.0


def test_the_timeline_chart_is_small_and_has_both_lanes():
    import matplotlib

    matplotlib.use("Agg", force=True)
    with AsyncDevice() as dev:
        start = time.perf_counter()
        forward = heavy_forward(dev)
        forward()
        dev.synchronize()
        fig = timing.plot_timeline(dev.timeline(start), {"naive": (start, start + 0.001)})
    assert tuple(fig.get_size_inches()) == (6, 2.8) and fig.dpi >= 100  # legible on a laptop
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["device", "host"]


def test_the_fake_device_queues_work_and_only_a_sync_waits_for_it():
    dev = FakeDevice(launch=0.002, work=0.01, sync_cost=0.0, slow_calls=1, slow_extra=0.5)
    dev.run()
    assert dev.clock() == pytest.approx(0.002)  # the call returned after its launch
    dev.sync()
    assert dev.clock() == pytest.approx(0.512)  # launch, then the first call's work and its extra cost
    dev.run()
    dev.run()
    dev.sync()
    assert dev.clock() == pytest.approx(0.512 + 0.002 + 0.02)  # queued work runs back to back
    assert dev.calls == 3 and "1 slow first calls" in repr(dev)


def test_the_fake_device_adds_a_spike_to_one_call_only():
    dev = FakeDevice(launch=0.0, work=0.01, sync_cost=0.0, spike_at=2, spike=0.2)
    times = []
    for _ in range(3):
        start = dev.clock()
        dev.run()
        dev.sync()
        times.append(dev.clock() - start)
    assert times == pytest.approx([0.01, 0.21, 0.01])
