"""Knowledge distillation of a wide teacher MLP into a small student on spectra.

Synthetic 1-D "spectra" (sums of class-specific Gaussian peaks on a noisy
baseline) are classified into 6 material classes. A wide teacher network is
trained first, then frozen (eval mode, every teacher forward under
torch.no_grad) and distilled into a small student with BatchNorm and dropout,
using the usual Hinton loss: KL between temperature-softened distributions
(scaled by T^2) mixed with hard-label cross-entropy. The student is validated
several times per epoch; after each mid-epoch validation the training loop puts
the student back into train mode before continuing.

expect: -
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(2024)
if torch.cuda.is_available():
    device = torch.device("cuda")
elif torch.backends.mps.is_available():
    device = torch.device("mps")
else:
    device = torch.device("cpu")

N_BINS, N_CLASSES = 64, 6


class SpectraGenerator:
    def __init__(self, seed):
        self.g = torch.Generator().manual_seed(seed)
        self.centers = torch.rand(N_CLASSES, 3, generator=self.g) * N_BINS
        self.grid = torch.arange(N_BINS).float()

    def sample(self, n):
        y = torch.randint(0, N_CLASSES, (n,), generator=self.g)
        c = self.centers[y] + 2.0 * torch.randn(n, 3, generator=self.g)
        amp = 0.5 + torch.rand(n, 3, generator=self.g)
        peaks = amp[:, :, None] * torch.exp(-(self.grid[None, None] - c[:, :, None]) ** 2 / 8.0)
        base = torch.linspace(0, 1, N_BINS)[None] * torch.rand(n, 1, generator=self.g)
        x = peaks.sum(1) + base + 0.35 * torch.randn(n, N_BINS, generator=self.g)
        return x, y


def mlp(width, depth, p_drop, bn):
    layers, d = [], N_BINS
    for _ in range(depth):
        layers += [nn.Linear(d, width)]
        if bn:
            layers += [nn.BatchNorm1d(width)]
        layers += [nn.ReLU(), nn.Dropout(p_drop)]
        d = width
    layers += [nn.Linear(d, N_CLASSES)]
    return nn.Sequential(*layers)


def distill_loss(s_logits, t_logits, y, T=4.0, alpha=0.7):
    kd = F.kl_div(F.log_softmax(s_logits / T, -1), F.softmax(t_logits / T, -1), reduction="batchmean")
    return alpha * kd * T * T + (1 - alpha) * F.cross_entropy(s_logits, y)


def validate(model, x, y):
    model.eval()
    with torch.no_grad():
        logits = model(x)
        return F.cross_entropy(logits, y).item(), (logits.argmax(-1) == y).float().mean().item()


def train_teacher(teacher, gen, steps=150):
    opt = torch.optim.Adam(teacher.parameters(), lr=1e-3)
    teacher.train()
    for _ in range(steps):
        x, y = gen.sample(128)
        x, y = x.to(device), y.to(device)
        loss = F.cross_entropy(teacher(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


def main():
    gen = SpectraGenerator(seed=11)
    x_val, y_val = [t.to(device) for t in gen.sample(1000)]

    teacher = mlp(256, 2, 0.2, bn=False).to(device)
    train_teacher(teacher, gen)
    teacher.eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    print("teacher val loss/acc: %.3f / %.3f" % validate(teacher, x_val, y_val))

    student = mlp(32, 2, 0.3, bn=True).to(device)
    opt = torch.optim.AdamW(student.parameters(), lr=2e-3, weight_decay=1e-3)
    epochs, steps_per_epoch, val_every = 3, 60, 20
    history = []
    for epoch in range(epochs):
        student.train()
        for step in range(steps_per_epoch):
            x, y = gen.sample(64)
            x, y = x.to(device), y.to(device)
            with torch.no_grad():
                t_logits = teacher(x)
            s_logits = student(x)
            loss = distill_loss(s_logits, t_logits, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

            if (step + 1) % val_every == 0:
                vl, va = validate(student, x_val, y_val)
                history.append((epoch, step + 1, vl, va))
                print(f"ep {epoch} it {step + 1:3d} train_kd {loss.item():.4f} val_loss {vl:.4f} val_acc {va:.3f}")
                student.train()
    best = max(history, key=lambda h: h[3])
    print(f"best student val acc {best[3]:.3f} (epoch {best[0]}, it {best[1]})")


if __name__ == "__main__":
    main()
