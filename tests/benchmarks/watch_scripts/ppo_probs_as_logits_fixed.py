"""PPO with a clipped surrogate on a small torch-written cart-balancing task (16 parallel
environments: position, velocity, angle and angular velocity of a pole on a cart, 2 actions,
episodes end when the pole falls or after 100 steps): an actor network that ends in a softmax
(its probabilities are also used for a greedy evaluation), a separate critic, 64-step rollouts
with generalized advantage estimation, 4 epochs of minibatch updates per rollout, Adam; the mean
episode length is printed every 10 updates. Fixed version: the
rollout and the update build Categorical(probs=probs) from the softmax output.
Written from: https://github.com/rlworkgroup/garage/pull/1357
expect: -
"""
import torch
import torch.nn as nn
from torch.distributions import Categorical

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
ENVS, HORIZON, ROLLOUT = 16, 100, 64


class CartPole:
    """The classic cart-pole equations (Barto, Sutton and Anderson, 1983), batched."""

    def __init__(self):
        self.state = torch.empty(ENVS, 4).uniform_(-0.05, 0.05)
        self.t = torch.zeros(ENVS, dtype=torch.long)

    def step(self, action):
        x, v, th, w = self.state.unbind(1)
        force = (action.float() * 2 - 1) * 10.0
        cos, sin = th.cos(), th.sin()
        tmp = (force + 0.05 * w * w * sin) / 1.1
        acc_th = (9.8 * sin - cos * tmp) / (0.5 * (4.0 / 3.0 - 0.1 * cos * cos / 1.1))
        acc_x = tmp - 0.05 * acc_th * cos / 1.1
        self.state = torch.stack([x + 0.02 * v, v + 0.02 * acc_x, th + 0.02 * w, w + 0.02 * acc_th], 1)
        self.t += 1
        done = (self.state[:, 0].abs() > 2.4) | (self.state[:, 2].abs() > 0.21) | (self.t >= HORIZON)
        reward = torch.ones(ENVS)
        self.state[done] = torch.empty(int(done.sum()), 4).uniform_(-0.05, 0.05)
        self.t[done] = 0
        return self.state.clone(), reward, done


actor = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 2),
                      nn.Softmax(dim=-1)).to(device)
critic = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 1)).to(device)
optimizer = torch.optim.Adam([*actor.parameters(), *critic.parameters()], lr=3e-4)


def policy(obs):
    return Categorical(probs=actor(obs))


def main():
    env = CartPole()
    obs, lengths, length = env.state.clone(), [], torch.zeros(ENVS)
    for update in range(60):
        buf = {k: [] for k in ("obs", "act", "logp", "rew", "done", "val")}
        with torch.no_grad():
            for _ in range(ROLLOUT):
                o = obs.to(device)
                dist = policy(o)
                action = dist.sample()
                buf["obs"].append(o)
                buf["act"].append(action)
                buf["logp"].append(dist.log_prob(action))
                buf["val"].append(critic(o).squeeze(-1))
                obs, reward, done = env.step(action.cpu())
                length += 1
                lengths += length[done].tolist()
                length[done] = 0
                buf["rew"].append(reward.to(device))
                buf["done"].append(done.float().to(device))
            next_val = critic(obs.to(device)).squeeze(-1)
        adv, gae = [], torch.zeros(ENVS, device=device)
        for t in reversed(range(ROLLOUT)):
            nv = next_val if t == ROLLOUT - 1 else buf["val"][t + 1]
            delta = buf["rew"][t] + 0.99 * nv * (1 - buf["done"][t]) - buf["val"][t]
            gae = delta + 0.99 * 0.95 * (1 - buf["done"][t]) * gae
            adv.insert(0, gae)
        adv = torch.stack(adv).flatten()
        ret = adv + torch.stack(buf["val"]).flatten()
        o, a, old = (torch.cat(buf[k]) for k in ("obs", "act", "logp"))
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        for _ in range(4):
            for idx in torch.randperm(len(o)).split(256):
                dist = policy(o[idx])
                ratio = (dist.log_prob(a[idx]) - old[idx]).exp()
                surrogate = torch.min(ratio * adv[idx], ratio.clamp(0.8, 1.2) * adv[idx])
                value_loss = (critic(o[idx]).squeeze(-1) - ret[idx]).pow(2).mean()
                loss = -surrogate.mean() + 0.5 * value_loss - 0.01 * dist.entropy().mean()
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_([*actor.parameters(), *critic.parameters()], 0.5)
                optimizer.step()
        if update % 10 == 9:
            recent = lengths[-50:] or [0]
            print(f"update {update + 1} mean episode length {sum(recent) / len(recent):.1f}")


if __name__ == "__main__":
    main()
