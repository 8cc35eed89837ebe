"""A loss that broadcasts: named at its line, followed through weights, masks and row reductions, in
an LBFGS closure too."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tests.watch_support import alarms, line_of, mlp, watched


def regression(broadcast: bool):
    def train(steps):
        model, x = mlp(), torch.randn(32, 4)
        y = x.sum(1)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        for _ in range(steps):
            pred = model(x) if broadcast else model(x).squeeze(1)
            loss = ((pred - y) ** 2).mean()  # broadcast
            opt.zero_grad()
            loss.backward()
            opt.step()

    return train


def test_a_loss_that_broadcasts_b1_against_b_is_named_at_its_line():
    found = watched(regression(broadcast=True))
    assert "broadcast" in found and found["broadcast"].where.line == line_of("broadcast")
    assert "(32, 1) and (32,)" in found["broadcast"].what and "(32, 32)" in found["broadcast"].what
    assert not alarms(watched(regression(broadcast=False)))


HAND_WRITTEN = {  # losses people write by hand, each fed the broadcast difference
    "weighted huber": lambda d, w: (w * torch.where(d.abs() < 0.5, d**2, d.abs())).sum() / w.sum(),
    "per-row mean": lambda d, w: (d**2).mean(dim=-1).mean(),
    "masked sum": lambda d, w: (d.abs() * (w > 0)).sum() / len(w),
}


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_a_broadcast_followed_through_weights_masks_and_row_reductions_is_named(name):
    def train(steps, fixed=False):
        model, x, w = mlp(), torch.randn(16, 4), torch.rand(16)
        opt = torch.optim.SGD(model.parameters(), lr=1e-2)
        for _ in range(steps):
            pred = model(x).squeeze(-1) if fixed else model(x)
            loss = HAND_WRITTEN[name](pred - x.sum(1), w)  # difference
            opt.zero_grad()
            loss.backward()
            opt.step()

    found = watched(train, 3)
    assert "broadcast" in alarms(found) and found["broadcast"].where.line == line_of("difference")
    assert not alarms(watched(lambda steps: train(steps, fixed=True), 3))


def test_mse_loss_on_mismatched_shapes_is_named_too():
    def train(steps, fixed=False):
        model, x = mlp(), torch.randn(16, 4)
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        for _ in range(steps):
            out = model(x)
            loss = F.mse_loss(out.squeeze(-1) if fixed else out, x[:, 0])
            opt.zero_grad()
            loss.backward()
            opt.step()

    with pytest.warns(UserWarning, match="target size"):
        assert "broadcast" in watched(train, 4)
    assert not alarms(watched(lambda s: train(s, fixed=True), 4))


def test_an_lbfgs_closure_is_the_users_code_and_its_broadcast_is_named():
    def train(steps, fixed=False):
        model, x = mlp(), torch.randn(32, 4)
        opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4)

        def closure():
            opt.zero_grad()
            pred = model(x).squeeze(-1) if fixed else model(x)
            loss = ((pred - x.sum(1)) ** 2).mean()  # closure loss
            loss.backward()
            return loss

        for _ in range(steps):
            opt.step(closure)

    found = watched(train, 4)
    assert alarms(found) == {"broadcast"} and found["broadcast"].where.line == line_of("closure loss")
    assert not alarms(watched(lambda steps: train(steps, fixed=True), 4))
