"""Does the emulated asynchronous device queue work, return at once, and wait exactly where a GPU would?"""

import threading

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import _get_current_dispatch_mode

from course_utils.labs import sync_lab
from course_utils.toolkit.emulate.async_queue import AsyncDevice
from course_utils.toolkit.timing import naive_vs_synced


def hold(dev: AsyncDevice) -> threading.Event:
    """Queue a kernel that blocks the device until the returned event is set."""
    gate = threading.Event()
    dev._submit("gate", lambda: gate.wait(600))  # 600 s: only a test that never opens it
    return gate


def adam_losses(model, batches):
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for x, y in batches:
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return torch.stack(losses).tolist(), [p.detach().clone() for p in model.parameters()]


def test_unmodified_training_with_adam_gives_bit_identical_results():
    batches = sync_lab.pooled_batches(n=3, reports=8)
    expected, weights = adam_losses(sync_lab.classifier_head(hidden=16), batches)
    with AsyncDevice(threads=torch.get_num_threads()) as dev:  # same threads: same reduction order
        model = dev.put(sync_lab.classifier_head(hidden=16))
        got, got_weights = adam_losses(model, [(dev.put(x), dev.put(y)) for x, y in batches])
    assert got == expected
    assert all(torch.equal(a, b) for a, b in zip(weights, got_weights, strict=True))
    assert dev.fallbacks == []


def test_a_call_returns_while_its_kernel_is_still_queued():
    with AsyncDevice() as dev:
        x = dev.put(torch.ones(3))
        gate = hold(dev)
        try:
            y = x * 2  # returns although the device is blocked
            queued, launched = dev.pending(), [s.name for s in dev.timeline() if s.kind == "launch"]
        finally:
            gate.set()
        assert queued == 2 and launched == ["mul"]
        assert y.tolist() == [2.0, 2.0, 2.0]
        assert dev.pending() == 0


def test_reading_a_value_blocks_until_the_queue_drains():
    events = []
    with AsyncDevice() as dev:
        total = dev.put(torch.ones(4)).sum()
        gate = threading.Event()
        dev._submit("gate", lambda: (gate.wait(600), events.append("gate opened")))
        # Opened from another thread, later: an item() that did not wait would return first.
        opener = threading.Timer(0.3, gate.set)
        opener.start()
        value = total.item()  # waits for the queue, the gate included
        events.append("item returned")
        opener.join()
    assert value == 4.0
    assert events == ["gate opened", "item returned"]
    assert [s.name for s in dev.spans if s.kind == "wait"] == ["item"]


def test_it_waits_exactly_where_find_sync_points_says(capsys):
    with AsyncDevice() as dev:
        model = dev.put(sync_lab.classifier_head())
        batches = [(dev.put(x), dev.put(y)) for x, y in sync_lab.pooled_batches()]
        sync_lab.leaky_loop(model, batches)
    assert {(g.where.line, g.kind) for g in dev.report.groups()} == sync_lab.planted_sync_points()
    waits = [s for s in dev.spans if s.kind == "wait"]
    assert len(waits) == len(dev.report) == 22


def test_naive_vs_synced_times_each_call_from_a_drained_device_until_it_drains_again():
    """The measured ratio (synchronized / naive on this workload) is lesson 03's; a busy
    machine can squeeze it, so tests/benchmarks/bench.py reports it rather than a test."""
    batch = sync_lab.issue_batch()
    queued_at_call = []
    with AsyncDevice() as dev:
        model, x = dev.put(sync_lab.issue_classifier()), dev.put(batch)

        def forward():
            queued_at_call.append(dev.pending())
            with torch.no_grad():
                return model(x)

        timing = naive_vs_synced(forward, dev, repeats=5)
        assert dev.pending() == 0
    assert len(queued_at_call) == 6 and queued_at_call[1:] == [0] * 5  # a warm-up, then 5 timed
    assert 0 < timing.naive < timing.synced


def test_launch_blocking_makes_each_call_wait_for_its_kernels():
    with AsyncDevice(launch_blocking=True) as dev:
        x = dev.put(torch.ones(3))
        y = x + 1
        assert dev.pending() == 0
        assert y.tolist() == [2.0, 2.0, 2.0]


def test_first_launch_of_an_op_signature_sets_it_up_once():
    with AsyncDevice() as dev:
        x = dev.put(torch.randn(4, 4))
        (x @ x).relu()
        first = dev.setups
        (x @ x).relu()
        assert first >= 2 and dev.setups == first
        (x[:2] @ x).relu()  # new shapes: new setups
        assert dev.setups > first


def test_views_share_device_memory_and_see_queued_writes():
    with AsyncDevice() as dev:
        x = dev.put(torch.zeros(2, 3))
        row = x[1]
        x.add_(1)
        row.mul_(5)
        assert x.tolist() == [[1.0, 1.0, 1.0], [5.0, 5.0, 5.0]]


def test_like_a_real_device_it_refuses_numpy_and_host_tensors():
    with AsyncDevice() as dev:
        x = dev.put(torch.ones(3))
        with pytest.raises(TypeError, match="Tensor.cpu"):
            x.numpy()
        with pytest.raises(RuntimeError, match="same device"):
            x + torch.ones(3)
        assert (x + torch.tensor(1.0)).tolist() == [2.0, 2.0, 2.0]  # host scalars are fine
        assert x.cpu().numpy().tolist() == [1.0, 1.0, 1.0]


def test_an_error_in_a_queued_kernel_surfaces_at_the_next_sync():
    with AsyncDevice() as dev:
        x = dev.put(torch.ones(3))
        picked = x.index_select(0, dev.put(torch.tensor([7])))  # shapes fine, index out of range
        with pytest.raises(RuntimeError, match="earlier queued op"):
            picked.item()


def test_tensors_made_by_factories_are_host_tensors_and_never_wait():
    with AsyncDevice() as dev:
        host = torch.tensor(3.0)
        assert host.item() == 3.0
        assert len(dev.report) == 0


def test_closing_drains_the_queue_removes_the_modes_and_restores_threads():
    threads = torch.get_num_threads()
    with AsyncDevice() as dev:
        y = dev.put(torch.ones(256, 256)) @ dev.put(torch.ones(256, 256))
    assert dev.pending() == 0 and y[0, 0].item() == 256.0
    assert _get_current_dispatch_mode() is None
    assert torch.get_num_threads() == threads


def test_module_put_moves_in_place_and_autograd_works():
    with AsyncDevice() as dev:
        model = nn.Linear(3, 1)
        assert dev.put(model) is model
        loss = model(dev.put(torch.ones(2, 3))).sum()
        loss.backward()
        assert model.weight.grad.shape == (1, 3)
        assert model.weight.grad.tolist() == [[2.0, 2.0, 2.0]]


def test_batch_norm_and_dropout_train_the_same_as_on_cpu():
    def run(put):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Dropout(0.3), nn.Linear(8, 2))
        put(model)
        torch.manual_seed(1)
        x, y = put(torch.randn(5, 6)), put(torch.tensor([0, 1, 1, 0, 1]))
        optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
        losses = []
        for _ in range(3):
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.detach())
        return torch.stack(losses).tolist(), model[1].running_mean.tolist()

    expected = run(lambda t: t)
    with AsyncDevice(threads=torch.get_num_threads()) as dev:  # same threads: same reduction order
        got = run(dev.put)
    assert got == expected
    assert dev.fallbacks == []
