"""Adversarial training (FGSM with a random start, "fast is better than free" style)
of a small BatchNorm/Dropout MLP on a synthetic 10-class problem. For every batch the
perturbation is crafted with the model frozen in eval mode: the input gets
requires_grad, torch.autograd.grad gives the gradient w.r.t. the input only, and the
model is then switched back to train mode and trained on the perturbed batch. Every
40 steps the clean and adversarial accuracy on a held-out split are reported.
expect: -
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SEED = 1234
torch.manual_seed(SEED)
device = torch.device("cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available() else "cpu"))

N_FEAT, N_CLS = 20, 10
EPS, ALPHA = 0.25, 0.3
BATCH, STEPS, EVAL_EVERY = 64, 240, 40


def make_split(n, gen):
    W = torch.randn(N_FEAT, N_CLS, generator=torch.Generator().manual_seed(7))
    x = torch.randn(n, N_FEAT, generator=gen)
    y = (x @ W + 0.3 * torch.randn(n, N_CLS, generator=gen)).argmax(1)
    return x, y


g = torch.Generator().manual_seed(SEED)
x_train, y_train = make_split(4096, g)
x_val, y_val = make_split(1024, g)
x_train, y_train, x_val, y_val = (t.to(device) for t in (x_train, y_train, x_val, y_val))


class Net(nn.Module):
    def __init__(self, width=128, p_drop=0.3):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(N_FEAT, width), nn.BatchNorm1d(width), nn.ReLU(), nn.Dropout(p_drop),
            nn.Linear(width, width), nn.BatchNorm1d(width), nn.ReLU(), nn.Dropout(p_drop),
        )
        self.head = nn.Linear(width, N_CLS)

    def forward(self, x):
        return self.head(self.body(x))


def fgsm(model, x, y, eps=EPS, alpha=ALPHA):
    """Random-start FGSM; gradients only w.r.t. the input, model params untouched."""
    was_training = model.training
    model.eval()
    delta = torch.empty_like(x).uniform_(-eps, eps)
    x_adv = (x + delta).requires_grad_(True)
    loss = F.cross_entropy(model(x_adv), y)
    (g_x,) = torch.autograd.grad(loss, x_adv)
    delta = (delta + alpha * g_x.sign()).clamp_(-eps, eps)
    model.train(was_training)
    return (x + delta).detach()


def evaluate(model, x, y, bs=256):
    model.eval()
    clean = adv = 0
    for i in range(0, len(x), bs):
        xb, yb = x[i:i + bs], y[i:i + bs]
        xb_adv = fgsm(model, xb, yb)
        with torch.no_grad():
            clean += (model(xb).argmax(1) == yb).sum().item()
            adv += (model(xb_adv).argmax(1) == yb).sum().item()
    model.train()
    return clean / len(x), adv / len(x)


model = Net().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.2, total_steps=STEPS)

model.train()
for step in range(1, STEPS + 1):
    idx = torch.randint(0, x_train.shape[0], (BATCH,), device=device)
    xb, yb = x_train[idx], y_train[idx]
    xb_adv = fgsm(model, xb, yb)

    logits = model(xb_adv)
    loss = F.cross_entropy(logits, yb)
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    opt.step()
    sched.step()

    if step % EVAL_EVERY == 0:
        clean_acc, adv_acc = evaluate(model, x_val, y_val)
        print(f"[{step:3d}] loss={loss.item():.3f} lr={sched.get_last_lr()[0]:.4f} "
              f"val clean={clean_acc:.3f} val adv={adv_acc:.3f}")
