"""Does ``course watch`` see copies of a model that go wrong (a shallow copy that shares the original's
tensors, a moving-average copy that never changes) and gradients clipped while a GradScaler still
has them scaled? Each check runs a small loop with the bug and with its fix."""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.toolkit.watch import watch


def watched(train, steps: int = 60, **options) -> dict:
    """{kind: finding} of ``train(steps)``: the alarms only."""
    torch.manual_seed(0)
    with watch(verbose=False, **options) as w:
        train(steps)
    return {f.kind: f for f in w.findings if f.alarm}


class MovingAverage:
    def __init__(self, model, decay=0.9, *, in_place=True):
        self.ema = copy.deepcopy(model)
        self.decay, self.in_place = decay, in_place

    @torch.no_grad()
    def update(self, model):
        for name, value in self.ema.state_dict().items():
            if self.in_place:
                value.mul_(self.decay).add_(model.state_dict()[name], alpha=1 - self.decay)
            else:
                value = value * self.decay + (1 - self.decay) * model.state_dict()[name]  # noqa: F841


def copies_loop(*, in_place=True, update=True, snapshot=False):
    def train(steps):
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        averaged = MovingAverage(model, in_place=in_place)
        best = copy.deepcopy(model) if snapshot else None  # a snapshot is meant to stay as it is
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        for _ in range(steps):
            x = torch.randn(16, 4)
            loss = F.mse_loss(model(x).squeeze(1), x.sum(1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if update:
                averaged.update(model)
        return best

    return train


def test_a_moving_average_that_never_changes_is_a_stale_copy_with_its_evidence():
    for bug in (dict(in_place=False), dict(update=False)):
        found = watched(copies_loop(**bug))
        assert "stale copy" in found, bug
        assert "bit-identical" in found["stale copy"].what and "optimizer steps" in found["stale copy"].what


def test_a_moving_average_updated_in_place_and_a_best_model_snapshot_are_quiet():
    assert "stale copy" not in watched(copies_loop(snapshot=True))


def test_a_shallow_copy_of_a_model_shares_its_parameters():
    def train(steps, shallow=True):
        policy = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        target = copy.copy(policy) if shallow else copy.deepcopy(policy)
        opt = torch.optim.SGD(policy.parameters(), lr=0.01)
        for _ in range(steps):
            x = torch.randn(8, 4)
            with torch.no_grad():
                goal = target(x).max(1).values
            loss = F.mse_loss(policy(x).max(1).values, goal + 1)
            opt.zero_grad()
            loss.backward()
            opt.step()

    found = watched(train, steps=5)
    assert "shared copy" in found and "4 parameter tensors" in found["shared copy"].what
    assert "shared copy" not in watched(lambda steps: train(steps, shallow=False), steps=5)


def amp_loop(*, unscale_first: bool):
    def train(steps):
        model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
        for _ in range(steps):
            x = torch.randn(16, 6)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = F.cross_entropy(model(x), x[:, :2].argmax(1))
            opt.zero_grad()
            scaler.scale(loss).backward()
            if unscale_first:
                scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()

    return train


def test_clipping_scaled_gradients_is_named_with_the_scale_and_unscaling_first_is_quiet():
    found = watched(amp_loop(unscale_first=False), steps=4)
    assert "clip before unscale" in found and "scale 1024" in found["clip before unscale"].what
    assert "clip before unscale" not in watched(amp_loop(unscale_first=True), steps=4)


def test_the_wrappers_are_removed_when_watching_stops():
    originals = (copy.copy, copy.deepcopy, torch.nn.utils.clip_grad_norm_, torch.amp.GradScaler.scale)
    watched(lambda steps: None, steps=0)
    assert (copy.copy, copy.deepcopy, torch.nn.utils.clip_grad_norm_, torch.amp.GradScaler.scale) == originals


class _Dropped(nn.Module):
    """A model with dropout (the watcher relays its forwards to check train/eval modes)."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.1), nn.Linear(8, 1))

    def forward(self, x):
        return self.body(x)


def test_a_model_saved_whole_under_watch_loads_with_weights_only_as_it_would_unwatched(tmp_path):
    safe = [_Dropped, nn.Sequential, nn.Linear, nn.Dropout]
    with watch(verbose=False) as w:
        model = _Dropped()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            model(torch.randn(8, 4)).pow(2).mean().backward()
            opt.step()
        twin = copy.deepcopy(model)
        hooked = [len(m._forward_pre_hooks) for m in (model, twin)]
        torch.save(model, tmp_path / "model.pt")
        torch.save({"model": twin, "step": 3}, tmp_path / "ckpt.pt")
        after = [len(m._forward_pre_hooks) for m in (model, twin)]
    assert hooked == [1, 1] and after == hooked  # the relay was there, and is back after the save
    assert w.live is False and not w.findings
    with torch.serialization.safe_globals(safe):
        loaded = torch.load(tmp_path / "model.pt")
        ckpt = torch.load(tmp_path / "ckpt.pt")
    assert not loaded._forward_pre_hooks and not ckpt["model"]._forward_pre_hooks
    assert torch.equal(loaded.body[0].weight, model.body[0].weight)
