"""REINFORCE with a baseline on a contextual bandit batch: each step draws 64 contexts (8 features),
the policy network gives a distribution over 4 arms, actions are sampled, rewards come from a
hidden linear payoff plus noise, and the loss is -(log pi(a|s) * advantage).mean() with the batch
mean reward as baseline and an entropy bonus. Adam, the average reward printed every 100 steps.
Fixed version: the softmax normalises each context's 4 arms (dim=-1).
Written from: https://github.com/DeepReinforcementLearning/DeepReinforcementLearningInAction/issues/32
expect: -
"""
import torch
import torch.nn as nn

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
payoff = torch.randn(8, 4)


def main():
    policy = nn.Sequential(nn.Linear(8, 64), nn.LeakyReLU(), nn.Linear(64, 4), nn.Softmax(dim=-1)).to(device)
    optimizer = torch.optim.Adam(policy.parameters(), lr=3e-3)
    recent = []
    for it in range(300):
        contexts = torch.randn(64, 8)
        probs = policy(contexts.to(device))
        dist = torch.distributions.Categorical(probs=probs / probs.sum(1, keepdim=True))
        actions = dist.sample()
        rewards = (contexts @ payoff).gather(1, actions.cpu()[:, None]).squeeze(1) + 0.1 * torch.randn(64)
        advantage = (rewards - rewards.mean()).to(device)
        log_probs = torch.log(probs.gather(1, actions[:, None]).squeeze(1))
        loss = -(log_probs * advantage).mean() - 0.01 * dist.entropy().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        recent.append(rewards.mean().item())
        if (it + 1) % 100 == 0:
            print(f"iter {it + 1} mean reward {sum(recent[-100:]) / 100:.3f}")


if __name__ == "__main__":
    main()
