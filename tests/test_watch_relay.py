"""``course watch``'s per-model relay (the forward pre-hook that serves the train/eval mode checks)
hands on the first forwards after each backward and then rests, so a rollout of hundreds of
forwards per update does not pay for it on each: it is off the model after ``FULL`` forwards with no
backward between, back on at the next backward, and on for every forward of a deep window. The
checks it serves still judge evaluation loops that follow an update. A budget with no room keeps
the later steps out of deep windows, so the resting relay is what is tested."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.toolkit.watch import watch
from course_utils.toolkit.watch.cost_budget import Budget
from course_utils.toolkit.watch.relay import FULL

ACTIONS = 3 * FULL  # forwards per update, more than the relay hands on


def policy_net() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 16), nn.Dropout(0.2), nn.ReLU(), nn.Linear(16, 2))


def rollout_update(policy, opt, hooked: list | None = None) -> None:
    """One episode of ``ACTIONS`` forwards, one per action, then one update from all of them."""
    log_probs = []
    for _ in range(ACTIONS):
        if hooked is not None:
            hooked.append(len(policy._forward_pre_hooks))
        log_probs.append(torch.log_softmax(policy(torch.randn(1, 4)), -1)[0, 0])
    loss = -torch.stack(log_probs).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()


def train_then_evaluate(evaluate, episodes: int = 6) -> dict:
    """Rollout updates under a watcher whose budget opens no window after the set-up, then
    ``evaluate(policy)``; {kind: finding}."""
    torch.manual_seed(0)
    with watch(verbose=False, cost=Budget(0.0, 0.0)) as w:
        policy = policy_net()
        opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
        for _ in range(episodes):
            rollout_update(policy, opt)
        evaluate(policy)
    return {f.kind: f for f in w.findings}


def test_the_relay_rests_after_its_first_forwards_and_is_back_after_the_backward():
    hooked: list[int] = []
    with watch(verbose=False, cost=Budget(0.0, 0.0)) as w:
        policy = policy_net()
        opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
        for _ in range(4):
            rollout_update(policy, opt, hooked)
        assert w.deep_steps == 1 and not w.ops.open  # the set-up's window only, closed
    later = [hooked[i * ACTIONS:(i + 1) * ACTIONS] for i in (1, 2, 3)]
    assert all(ep == [1] * FULL + [0] * (ACTIONS - FULL) for ep in later), later
    assert not policy._forward_pre_hooks  # and none is left when watching stops


def test_every_forward_of_a_deep_window_is_relayed():
    hooked: list[int] = []
    with watch(verbose=False, deep_every=1):
        policy = policy_net()
        opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
        for _ in range(3):
            rollout_update(policy, opt, hooked)
    assert hooked[ACTIONS:] == [1] * (2 * ACTIONS)


def test_an_evaluation_after_rollout_updates_is_still_judged():
    def no_grad_in_train_mode(policy):
        with torch.no_grad():
            for _ in range(ACTIONS):
                policy(torch.randn(1, 4))

    def eval_mode_with_grad(policy):
        policy.eval()
        for _ in range(ACTIONS):
            policy(torch.randn(1, 4))

    def correct(policy):
        policy.eval()
        with torch.no_grad():
            for _ in range(ACTIONS):
                policy(torch.randn(1, 4))

    assert "train mode in eval" in train_then_evaluate(no_grad_in_train_mode)
    assert "grad in eval" in train_then_evaluate(eval_mode_with_grad)
    assert not {k for k, f in train_then_evaluate(correct).items() if f.alarm}


def test_a_policy_left_in_eval_mode_is_found_though_its_relay_rests():
    def left_in_eval(policy, opt):
        policy.eval()  # a forgotten policy.train() after an evaluation
        for _ in range(5):
            rollout_update(policy, opt)

    torch.manual_seed(0)
    with watch(verbose=False, cost=Budget(0.0, 0.0)) as w:
        policy = policy_net()
        opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
        left_in_eval(policy, opt)
    kinds = {f.kind for f in w.findings}
    assert "eval mode" in kinds or "grad in eval" in kinds, kinds


def test_twin_inputs_after_a_resting_rollout_are_trained_not_evaluation():
    def train(policy, opt):
        for _ in range(4):
            log_probs = [torch.log_softmax(policy(torch.randn(1, 4)), -1)[0, 0] for _ in range(ACTIONS)]
            left, right = policy(torch.randn(8, 4)), policy(torch.randn(8, 4))
            loss = -torch.stack(log_probs).sum() + F.mse_loss(left, right)
            opt.zero_grad()
            loss.backward()
            opt.step()

    torch.manual_seed(0)
    with watch(verbose=False, cost=Budget(0.0, 0.0)) as w:
        policy = policy_net()
        train(policy, torch.optim.Adam(policy.parameters(), lr=1e-2))
    assert not [f for f in w.findings if f.alarm]
