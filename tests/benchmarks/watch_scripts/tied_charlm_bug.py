"""Small research-repo style character language model (Bengio-style MLP LM with a fixed context
window) trained on text sampled from a synthetic probabilistic grammar. The input embedding and
the output projection share weights (weight tying), a sinusoidal position table is a frozen
parameter, a scheduler factory builds a per-step warm-up + cosine LambdaLR, the loop clips the
gradient norm and logs every N steps, and validation perplexity is computed under no_grad.
Bug: the gradient-clipping call sits before loss.backward() (right after zero_grad, so it clips
nothing), and the SGD learning rate in the config is 1e-7, so each update is about a billionth
of the weight magnitude and the loss barely moves.
expect: update ratio
"""
import math
import random
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


@dataclass
class LMConfig:
    context: int = 6
    d_model: int = 48
    hidden: int = 128
    batch_size: int = 64
    max_steps: int = 240
    warmup_steps: int = 20
    lr: float = 1e-7
    momentum: float = 0.9
    max_grad_norm: float = 1.0
    log_interval: int = 40
    eval_interval: int = 80
    scheduler: str = "cosine"


SUBJ = ["the cat", "a dog", "my friend", "the old man", "she", "he"]
VERB = ["sees", "likes", "eats", "finds", "wants"]
OBJ = ["the ball", "a red apple", "some bread", "the moon", "her book", "it"]
END = [".", "!", " today.", " again."]


def sample_text(n_sentences, rnd):
    return " ".join(f"{rnd.choice(SUBJ)} {rnd.choice(VERB)} {rnd.choice(OBJ)}{rnd.choice(END)}"
                    for _ in range(n_sentences))


class CharMLPLM(nn.Module):
    def __init__(self, vocab_size, cfg):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, cfg.d_model)
        pos = torch.arange(cfg.context).unsqueeze(1) * torch.exp(
            torch.arange(0, cfg.d_model, 2) * (-math.log(10000.0) / cfg.d_model))
        table = torch.zeros(cfg.context, cfg.d_model)
        table[:, 0::2], table[:, 1::2] = torch.sin(pos), torch.cos(pos)
        self.pos = nn.Parameter(table, requires_grad=False)
        self.mlp = nn.Sequential(nn.Linear(cfg.context * cfg.d_model, cfg.hidden), nn.Tanh(),
                                 nn.Linear(cfg.hidden, cfg.d_model))
        self.lm_head = nn.Linear(cfg.d_model, vocab_size, bias=False)
        self.lm_head.weight = self.tok.weight  # weight tying

    def forward(self, idx):
        x = self.tok(idx) + self.pos
        return self.lm_head(self.mlp(x.flatten(1)))


def build_scheduler(name, optimizer, warmup, total):
    if name == "constant":
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup))
    if name == "cosine":
        def fn(s):
            if s < warmup:
                return (s + 1) / warmup
            progress = (s - warmup) / max(1, total - warmup)
            return 0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * progress))
        return torch.optim.lr_scheduler.LambdaLR(optimizer, fn)
    raise ValueError(f"unknown scheduler {name}")


def make_windows(ids, context):
    X = ids.unfold(0, context, 1)[:-1]
    y = ids[context:]
    return X, y


@torch.no_grad()
def perplexity(model, X, y):
    model.eval()
    nll = F.cross_entropy(model(X), y)
    model.train()
    return math.exp(nll.item())


def main():
    cfg = LMConfig()
    rnd = random.Random(3)
    torch.manual_seed(3)
    text = sample_text(900, rnd)
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    ids = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    split = int(0.9 * len(ids))
    Xtr, ytr = make_windows(ids[:split], cfg.context)
    Xva, yva = make_windows(ids[split:], cfg.context)
    Xtr, ytr, Xva, yva = Xtr.to(device), ytr.to(device), Xva.to(device), yva.to(device)

    model = CharMLPLM(len(chars), cfg).to(device)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, nesterov=True)
    scheduler = build_scheduler(cfg.scheduler, optimizer, cfg.warmup_steps, cfg.max_steps)
    print(f"vocab {len(chars)}  train windows {len(ytr)}  init val ppl {perplexity(model, Xva, yva):.2f}")

    model.train()
    for step in range(1, cfg.max_steps + 1):
        ix = torch.randint(0, len(ytr), (cfg.batch_size,), device=device)
        logits = model(Xtr[ix])
        loss = F.cross_entropy(logits, ytr[ix])
        optimizer.zero_grad(set_to_none=True)
        grad_norm = torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
        loss.backward()
        optimizer.step()
        scheduler.step()
        if step % cfg.log_interval == 0:
            print(f"step {step:4d} loss {loss.item():.4f} grad_norm {float(grad_norm):.3f} "
                  f"lr {scheduler.get_last_lr()[0]:.2e}")
        if step % cfg.eval_interval == 0:
            print(f"  val ppl {perplexity(model, Xva, yva):.2f}")


if __name__ == "__main__":
    main()
