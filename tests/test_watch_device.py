"""Device traffic: host syncs and copies per step (named at the user's line, notes where they are
the batch's own), memory that grows, ops that fall back on a Mac, and the tools these checks
share with lessons 03 and 04."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_utils.toolkit.watch.deep import _holder
from tests.watch_support import alarms, line_of, watched


def test_a_batch_drawn_at_random_on_the_host_is_a_note_not_a_host_copy():
    def train(steps):
        model = nn.Sequential(nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 1))
        opt = torch.optim.SGD(model.parameters(), lr=1e-2)
        for _ in range(steps):
            x = torch.randn(16, 6).to("cpu")  # fresh data each step: seeded on the host on purpose
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()

    found = watched(train, 6)
    assert not alarms(found) and "random numbers" in found["note"].what


def host_loop(*, syncs: bool = False, host_mask: bool = False, keep_graph: bool = False):
    def train(steps):
        model = nn.Sequential(nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 1))
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        x, y = torch.randn(16, 6), torch.randn(16, 1)
        history, total = [], torch.zeros(())
        for _ in range(steps):
            mask = torch.ones(6, 6).tril() if host_mask else x.new_ones(6, 6).tril()  # mask
            mask = mask.to(x.device)
            pred = model(x @ mask)
            loss = F.mse_loss(pred, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if syncs:
                history.append((loss.item(), pred.mean().item(), pred.std().item()))  # sync
            else:
                total += loss.detach()
            if keep_graph:
                history.append(loss)
        return total.item()

    return train


def test_host_syncs_every_step_are_named_at_their_line():
    found = watched(host_loop(syncs=True), 6)
    assert "host sync" in alarms(found) and found["host sync"].where.line == line_of("sync")
    assert not alarms(watched(host_loop(), 6))


def rollout(reads_per_action: int, supervised: bool = False):
    """A policy run once per action, trained after the episode (REINFORCE); or (``supervised``) one
    forward per step, each reading an accuracy."""
    def train(steps):
        policy = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
        opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
        for _ in range(steps):
            log_probs = []
            for _ in range(1 if supervised else 20):
                dist = torch.distributions.Categorical(logits=policy(torch.randn(1, 4)))
                action = dist.sample()
                log_probs.append(dist.log_prob(action))
                for _ in range(reads_per_action):
                    action.item()  # the action the environment needs
            opt.zero_grad()
            torch.cat(log_probs).sum().neg().backward()
            opt.step()

    return train


def test_a_rollout_reading_its_action_once_per_forward_is_quiet_and_more_reads_are_named():
    assert not watched(rollout(1), 6)  # not even a note: the environment needs the action
    found = watched(rollout(3), 6)
    assert "host sync" in alarms(found)
    assert found["host sync"].where.line == line_of("the action the environment needs")
    assert "note" in watched(rollout(1, supervised=True), 6)  # one forward per backward: logging


def test_a_mask_built_on_the_host_every_step_is_a_copy_per_step():
    found = watched(host_loop(host_mask=True), 6)
    assert "host copy" in alarms(found) and "torch.ones" in found["host copy"].what


class Positions(nn.Module):
    """Adds position features that ``forward`` builds on the host at every call (or once, as a buffer)."""

    def __init__(self, buffer: bool):
        super().__init__()
        self.lin = nn.Linear(6, 1)
        self.register_buffer("pos", torch.arange(6.0) / 6 if buffer else None)

    def forward(self, x):
        pos = self.pos if self.pos is not None else (torch.arange(6.0) / 6).to(x.device)  # positions
        return self.lin(x + pos)


def labelled_loop(model, labels_shape: tuple):
    def train(steps):
        opt = torch.optim.SGD(model.parameters(), lr=1e-2)
        for _ in range(steps):
            x = torch.randn(16, 6, device="cpu")
            target = torch.ones(labels_shape).to(x.device)  # the batch's labels, rebuilt each step
            opt.zero_grad()
            F.mse_loss(model(x).reshape(labels_shape), target).backward()
            opt.step()

    return train


def test_positions_the_model_builds_on_the_host_each_call_are_a_host_copy_at_their_line():
    found = watched(labelled_loop(Positions(buffer=False), (16, 1)), 6)
    assert "host copy" in alarms(found) and found["host copy"].where.line == line_of("positions")
    assert not alarms(watched(labelled_loop(Positions(buffer=True), (16, 1)), 6))


@pytest.mark.parametrize("shape", [(16,), (16, 1)])
def test_labels_the_loop_rebuilds_with_the_batch_are_a_note(shape):
    found = watched(labelled_loop(nn.Linear(6, 1), shape), 6)
    assert not alarms(found) and "the same every step" in found["note"].what


def test_keeping_the_loss_with_its_graph_is_memory_that_grows():
    found = watched(host_loop(keep_graph=True), 8)
    assert "memory growth" in alarms(found) and "held by a list" in found["memory growth"].what


def test_the_holder_of_a_kept_tensor_is_named_as_the_variable_or_container_that_holds_it():
    """A running total at a script's top level is a global variable, one kept on an object is its
    attribute, one appended to a list is the list."""

    class Trainer:
        pass

    kept = torch.ones(1, requires_grad=True) * 2
    script = {"__name__": "__main__", "__builtins__": __builtins__, "history": kept}
    assert _holder(kept, {}) == "; held by the global variable `history`"
    del script["history"]
    trainer = Trainer()
    trainer.total = kept
    assert _holder(kept, {}) == "; held by the attribute `total` of a Trainer"
    del trainer.total
    losses = [kept]
    assert _holder(kept, {}) == "; held by a list of 1 items" and losses


def test_an_op_that_always_falls_back_on_a_mac_is_named():
    def train(steps, max_norm=1.0):
        emb, head = nn.Embedding(20, 4, max_norm=max_norm), nn.Linear(4, 2)
        opt = torch.optim.SGD([*emb.parameters(), *head.parameters()], lr=0.1)
        model = nn.Sequential(emb, head)
        tokens = torch.randint(0, 20, (8,))
        for _ in range(steps):
            opt.zero_grad()
            F.cross_entropy(model(tokens), tokens % 2).backward()
            opt.step()

    assert "fallback" in alarms(watched(train, 4))
    assert not alarms(watched(lambda s: train(s, max_norm=None), 4))


def test_find_sync_points_without_arguments_watches_what_the_function_creates():
    from course_utils.toolkit.syncs.finder import find_sync_points

    def train():
        model = nn.Linear(3, 1)
        for _ in range(2):
            print(model(torch.ones(2, 3)).sum().item())

    report = find_sync_points(train)
    assert report.count("item") == 2 and "no tensor or module was passed in" in str(report)


def test_the_op_trace_counts_the_copy_of_a_tensor_made_by_from_numpy():
    import numpy as np

    from course_utils.toolkit.emulate.mps_fallback import emulate_fallback
    from course_utils.toolkit.optrace import trace

    def step(w):
        return torch.from_numpy(np.ones((4, 3), dtype=np.float32)).to(w.device) @ w

    with emulate_fallback(device="cpu"):
        assert trace(step, torch.randn(3, 2)).copies == 1


def test_the_emulated_device_takes_tensors_made_with_device_equals():
    from course_utils.toolkit.emulate.async_queue import AsyncDevice

    with AsyncDevice() as dev:
        x = dev.put(torch.ones(2, 3))
        assert (x + torch.arange(3, device=x.device)).tolist() == [[1.0, 2.0, 3.0]] * 2


def test_the_always_fallback_list_is_the_one_of_torch_2_13():
    from course_utils.toolkit.emulate.mps_fallback import ALWAYS_FALLBACK

    assert ALWAYS_FALLBACK == ("aten::embedding_renorm_", "aten::linalg_svd")  # col2im, upsample: native
