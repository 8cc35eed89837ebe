"""Advantage actor-critic on a small corridor world written in torch (8 parallel environments,
positions 0-9, actions left/stay/right, reward 1 at the right end, episodes of at most 30 steps):
a shared MLP trunk with a policy head and a value head, 5-step rollouts with bootstrapped
returns, an entropy bonus, RMSprop as in the A2C baselines; the mean episode return is printed
every 100 updates. Bug: the policy head ends in nn.Softmax (written for a greedy demo) and the
rollout builds Categorical(logits=probs): the probabilities are treated as logits and pushed
through a second softmax, which flattens the policy (all three logits lie in [0, 1]), weakens
the policy gradient and caps the entropy bonus's effect.
Written from: https://github.com/runame/laplace-redux/pull/1
expect: probabilities as logits
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
ENVS, SIZE, HORIZON = 8, 10, 30


class Corridor:
    def __init__(self):
        self.pos = torch.zeros(ENVS, dtype=torch.long)
        self.t = torch.zeros(ENVS, dtype=torch.long)

    def obs(self):
        return F.one_hot(self.pos, SIZE).float()

    def step(self, action):
        self.pos = (self.pos + action - 1).clamp(0, SIZE - 1)
        self.t += 1
        reward = (self.pos == SIZE - 1).float()
        done = (self.pos == SIZE - 1) | (self.t >= HORIZON)
        self.pos[done], self.t[done] = 0, 0
        return self.obs(), reward, done


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(SIZE, 64), nn.Tanh())
        self.policy = nn.Sequential(nn.Linear(64, 3), nn.Softmax(dim=-1))
        self.value = nn.Linear(64, 1)

    def forward(self, obs):
        h = self.trunk(obs)
        return self.policy(h), self.value(h).squeeze(-1)


def main():
    env, model = Corridor(), ActorCritic().to(device)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=7e-4, alpha=0.99, eps=1e-5)
    obs, finished, episode_return = env.obs(), [], torch.zeros(ENVS)
    for update in range(400):
        log_probs, values, rewards, masks, entropies = [], [], [], [], []
        for _ in range(5):
            probs, value = model(obs.to(device))
            dist = Categorical(logits=probs)
            action = dist.sample()
            obs, reward, done = env.step(action.cpu())
            episode_return += reward
            finished += episode_return[done].tolist()
            episode_return[done] = 0
            log_probs.append(dist.log_prob(action))
            entropies.append(dist.entropy())
            values.append(value)
            rewards.append(reward.to(device))
            masks.append((~done).float().to(device))
        with torch.no_grad():
            ret = model(obs.to(device))[1]
        returns = []
        for r, m in zip(reversed(rewards), reversed(masks)):
            ret = r + 0.99 * ret * m
            returns.insert(0, ret)
        returns, values = torch.stack(returns), torch.stack(values)
        advantage = returns - values
        loss = (-(torch.stack(log_probs) * advantage.detach()).mean() + 0.5 * advantage.pow(2).mean()
                - 0.01 * torch.stack(entropies).mean())
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        if update % 100 == 99:
            print(f"update {update + 1} mean return {sum(finished[-50:]) / max(1, len(finished[-50:])):.2f}")


if __name__ == "__main__":
    main()
