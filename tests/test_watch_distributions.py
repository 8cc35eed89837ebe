"""Probabilities given to ``Categorical`` as logits are named at the user's line; real logits, and
probabilities given as ``probs=``, are not. Also the rules the same kind of mistakes share with
other checks: reads of the loss are logging, a weight before batch norm has no meaningful size."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions import Categorical

from course_utils.toolkit.watch.cost_budget import Budget
from course_utils.toolkit.watch.models import scale_invariant
from tests.watch_support import alarms, line_of, watched


def policy_loop(how: str):
    def train(steps):
        head = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 3))
        if how != "logits":
            head.append(nn.Softmax(dim=-1))
        opt = torch.optim.Adam(head.parameters(), lr=1e-2)
        for _ in range(steps):
            out = head(torch.randn(8, 4))
            dist = Categorical(probs=out) if how == "probs" else Categorical(logits=out)  # dist
            action = dist.sample()
            loss = -(dist.log_prob(action) * (action == 2).float()).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

    return train


def test_probabilities_given_as_logits_are_named_with_their_numbers():
    found = watched(policy_loop("softmax as logits"), 6, deep_every=None)
    finding = found["probabilities as logits"]
    assert finding.where.line == line_of("dist") and "sum to 1" in finding.what and "probs=" in finding.fix


@pytest.mark.parametrize("how", ["logits", "probs"])
def test_real_logits_and_probabilities_given_as_probs_are_quiet(how):
    assert "probabilities as logits" not in watched(policy_loop(how), 6, deep_every=None)


def test_reads_of_the_loss_alone_are_logging_and_a_metric_read_beside_them_adds_up():
    def train(steps, metrics: bool):
        model = nn.Linear(6, 3)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = torch.randn(32, 6), torch.randint(0, 3, (32,))
        for _ in range(steps):
            logits = model(x)
            mse, ce = logits.pow(2).mean(), F.cross_entropy(logits, y)
            loss = ce + 0.01 * mse
            opt.zero_grad()
            loss.backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), 10.0)
            opt.step()
            logged = (loss.item(), mse.item(), ce.item())  # three reads of the loss and its terms
            if metrics:  # an accuracy and the gradient norm: values with no graph
                logged += ((logits.argmax(1) == y).float().mean().item(), norm.item())

    assert not watched(lambda s: train(s, False), 6)  # not even a note
    assert "host sync" in alarms(watched(lambda s: train(s, True), 6))


def test_a_weight_before_batch_norm_is_scale_invariant_and_a_plain_one_is_not():
    net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.Linear(8, 2),
                        nn.LayerNorm(2))
    assert scale_invariant(net, "0.weight")
    assert not scale_invariant(net, "4.weight")  # layer norm after a layer with a bias
    assert not scale_invariant(net, "0.bias")


def test_a_cut_window_over_many_passes_asks_room_for_one_pass():
    budget = Budget(share=0.05, floor=0.3, clock=lambda: 0.0)
    budget.charge(0.4, window=True, passes=16)
    assert budget.need == pytest.approx(0.05)
