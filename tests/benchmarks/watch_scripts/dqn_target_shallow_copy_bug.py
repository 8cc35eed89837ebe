"""DQN on a small deterministic grid world (a 6x6 grid, four actions, reward 1 at the goal,
-0.01 per move) with a replay buffer, epsilon-greedy exploration decaying over 700 steps, a
Huber TD loss, Adam, and a target network synchronised every 100 steps with load_state_dict.
Bug: the target network is made with copy.copy(policy_net), a shallow copy whose parameters are
the policy network's own tensors: the "target" moves with every optimizer step, the periodic
load_state_dict copies a tensor onto itself, and the bootstrap target chases the estimate it
trains.
Written from: https://github.com/mit-ll-trusted-autonomy/pyquaticus/pull/31
expect: shared copy
"""
import copy
import random
from collections import deque

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
random.seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
SIZE, GOAL = 6, (5, 5)
MOVES = [(0, 1), (1, 0), (0, -1), (-1, 0)]


def encode(pos):
    s = torch.zeros(SIZE * SIZE)
    s[pos[0] * SIZE + pos[1]] = 1.0
    return s


def step(pos, action):
    r, c = pos[0] + MOVES[action][0], pos[1] + MOVES[action][1]
    nxt = (min(max(r, 0), SIZE - 1), min(max(c, 0), SIZE - 1))
    return nxt, (1.0 if nxt == GOAL else -0.01), nxt == GOAL


def main():
    policy_net = nn.Sequential(nn.Linear(SIZE * SIZE, 64), nn.ReLU(), nn.Linear(64, 4)).to(device)
    target_net = copy.copy(policy_net)
    optimizer = torch.optim.Adam(policy_net.parameters(), lr=1e-3)
    buffer = deque(maxlen=5000)
    pos, episode_return, returns = (0, 0), 0.0, []
    for t in range(1200):
        eps = max(0.05, 1 - t / 700)
        if random.random() < eps:
            action = random.randrange(4)
        else:
            with torch.no_grad():
                action = int(policy_net(encode(pos).to(device)).argmax())
        nxt, reward, done = step(pos, action)
        buffer.append((encode(pos), action, reward, encode(nxt), done))
        episode_return += reward
        pos = (0, 0) if done else nxt
        if done:
            returns.append(episode_return)
            episode_return = 0.0
        if len(buffer) >= 256:
            s, a, r, s2, d = zip(*random.sample(buffer, 64))
            s, s2 = torch.stack(s).to(device), torch.stack(s2).to(device)
            a, r, d = torch.tensor(a, device=device), torch.tensor(r, device=device), torch.tensor(d, device=device)
            q = policy_net(s).gather(1, a[:, None]).squeeze(1)
            with torch.no_grad():
                target = r + 0.95 * target_net(s2).max(1).values * (~d)
            loss = F.smooth_l1_loss(q, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if t % 100 == 0:
            target_net.load_state_dict(policy_net.state_dict())
        if t % 500 == 0 and returns:
            print(f"step {t} episodes {len(returns)} mean return {sum(returns[-10:]) / len(returns[-10:]):.3f}")


if __name__ == "__main__":
    main()
