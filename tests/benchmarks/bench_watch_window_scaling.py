"""What one op-by-op window of ``course watch`` costs against the length of the step it watches: a
REINFORCE episode (``reinforcement_learning/reinforce.py``'s policy: one forward, a ``Categorical``
sample and an ``.item()`` per action, one backward per episode) of N actions, timed plain and under
a window (``deep_every=1``, no budget), in one process. A window's cost should grow with N as the
plain step does (a constant factor); a map that is rebuilt at every op once a step keeps thousands
of tensors alive made it grow with N squared.

    python tests/benchmarks/bench_watch_window_scaling.py [--actions 20 100 300 500 1000]

Prints this thread's CPU seconds per episode and their ratio. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import math
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions import Categorical

from course_utils.toolkit.watch import watch
from course_utils.toolkit.watch.cost_budget import Budget


class Policy(nn.Module):
    """reinforce.py's policy: 4 -> 128 (dropout, ReLU) -> 2, a softmax over the actions."""

    def __init__(self):
        super().__init__()
        self.affine1, self.dropout, self.affine2 = nn.Linear(4, 128), nn.Dropout(0.6), nn.Linear(128, 2)

    def forward(self, x):
        return F.softmax(self.affine2(F.relu(self.dropout(self.affine1(x)))), dim=1)


def episode(policy: nn.Module, opt: torch.optim.Optimizer, actions: int) -> float:
    """One episode of ``actions`` actions and its update; this thread's CPU seconds."""
    start = time.thread_time()
    log_probs = []
    for _ in range(actions):
        dist = Categorical(policy(torch.randn(1, 4)))
        action = dist.sample()
        log_probs.append(dist.log_prob(action))
        action.item()
    returns = torch.randn(actions)
    loss = torch.cat([-lp * r for lp, r in zip(log_probs, returns, strict=True)]).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return time.thread_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--actions", type=int, nargs="+", default=[20, 100, 300, 500, 1000])
    args = parser.parse_args()
    torch.manual_seed(0)
    policy = Policy()
    opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
    episode(policy, opt, 20)  # warm-up
    plain = {n: episode(policy, opt, n) for n in args.actions}
    with watch(verbose=False, deep_every=1, cost=Budget(share=math.inf)):
        episode(policy, opt, 20)  # the set-up window
        windowed = {n: episode(policy, opt, n) for n in args.actions}
    print(f"{'actions':>8} {'plain (s)':>10} {'window (s)':>11} {'ratio':>7}")
    for n in args.actions:
        print(f"{n:>8} {plain[n]:>10.3f} {windowed[n]:>11.3f} {windowed[n] / plain[n]:>6.1f}x")


if __name__ == "__main__":
    main()
