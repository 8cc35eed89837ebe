"""REINFORCE with a learned baseline on a tiny hand-written "corridor" environment.

The environment is simulated on the host in plain Python: the agent starts in the middle of a
1-D corridor and must walk to the goal on the right end before a step budget runs out, paying a
small cost per step and a penalty for bumping into the left wall. A small actor-critic network
(shared torso, policy head, value head) picks an action every env step (one `.item()` per step to
hand the action to the simulator), discounted returns are computed in Python at the end of each
episode, and the policy is trained with the REINFORCE estimator using the value head as a
baseline (advantages use the detached value on purpose) plus an entropy bonus.

expect: -
"""
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

SEED = 7
random.seed(SEED)
np.random.seed(SEED)
torch.manual_seed(SEED)

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


class Corridor:
    """Positions 0..length-1, goal at the right end. Actions: 0=left, 1=stay, 2=right."""

    def __init__(self, length=9, max_steps=24):
        self.length = length
        self.max_steps = max_steps

    def reset(self):
        self.pos = self.length // 2 + random.choice([-2, -1, 0])
        self.t = 0
        return self._obs()

    def _obs(self):
        one_hot = [0.0] * self.length
        one_hot[self.pos] = 1.0
        return one_hot + [self.t / self.max_steps]

    def step(self, action):
        self.t += 1
        reward = -0.05
        self.pos += action - 1
        if self.pos < 0:
            self.pos = 0
            reward -= 0.5
        done = False
        if self.pos >= self.length - 1:
            self.pos = self.length - 1
            reward += 1.0
            done = True
        if self.t >= self.max_steps:
            done = True
        return self._obs(), reward, done


class ActorCritic(nn.Module):
    def __init__(self, obs_dim, n_actions, hidden=32):
        super().__init__()
        self.torso = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.pi = nn.Linear(hidden, n_actions)
        self.v = nn.Linear(hidden, 1)

    def forward(self, obs):
        h = self.torso(obs)
        return self.pi(h), self.v(h).squeeze(-1)


def discounted_returns(rewards, gamma):
    out, running = [], 0.0
    for r in reversed(rewards):
        running = r + gamma * running
        out.append(running)
    return out[::-1]


env = Corridor()
net = ActorCritic(obs_dim=env.length + 1, n_actions=3).to(device)
optimizer = torch.optim.Adam(net.parameters(), lr=3e-3)

GAMMA = 0.97
ENTROPY_COEF = 0.01
N_EPISODES = 200
recent = []

for episode in range(N_EPISODES):
    obs = env.reset()
    log_probs, values, entropies, rewards = [], [], [], []
    done = False
    while not done:
        obs_t = torch.tensor(obs, dtype=torch.float32, device=device)
        logits, value = net(obs_t)
        dist = Categorical(logits=logits)
        action = dist.sample()
        obs, reward, done = env.step(action.item())
        log_probs.append(dist.log_prob(action))
        values.append(value)
        entropies.append(dist.entropy())
        rewards.append(reward)

    returns = torch.tensor(discounted_returns(rewards, GAMMA), dtype=torch.float32, device=device)
    log_probs = torch.stack(log_probs)
    values = torch.stack(values)
    entropy = torch.stack(entropies).mean()

    advantages = returns - values.detach()
    policy_loss = -(log_probs * advantages).sum()
    value_loss = F.smooth_l1_loss(values, returns, reduction="sum")
    loss = policy_loss + 0.5 * value_loss - ENTROPY_COEF * entropy

    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(net.parameters(), 1.0)
    optimizer.step()

    recent.append(sum(rewards))
    if (episode + 1) % 50 == 0:
        print(f"episode {episode + 1:4d}  mean return (last 50) {np.mean(recent[-50:]):+.3f}  "
              f"entropy {entropy.item():.3f}")

# greedy evaluation
net.eval()
eval_returns = []
with torch.no_grad():
    for _ in range(20):
        obs, done, total = env.reset(), False, 0.0
        while not done:
            logits, _ = net(torch.tensor(obs, dtype=torch.float32, device=device))
            obs, r, done = env.step(int(logits.argmax()))
            total += r
        eval_returns.append(total)
print(f"greedy eval return: {np.mean(eval_returns):+.3f}")
