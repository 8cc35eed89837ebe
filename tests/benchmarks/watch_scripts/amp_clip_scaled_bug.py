"""Mixed-precision training (bfloat16 autocast on CPU, float16 where a GPU is present) of a
transformer-encoder classifier on synthetic token sequences, with a torch.amp.GradScaler (init
scale 2**12), gradient clipping to max norm 1.0 and AdamW with a linear warm-up; validation
accuracy each epoch. Bug: clip_grad_norm_ runs on the scaled gradients, before
scaler.unscale_(optimizer): the total norm it measures is ~4096 times too large, so every step
is clipped by that factor and training crawls (the order in the AMP docs is backward, unscale_,
clip, step).
Written from: https://github.com/milesial/Pytorch-UNet/issues/468
expect: clip before unscale
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
amp_device = "cuda" if device == "cuda" else "cpu"
amp_dtype = torch.float16 if device == "cuda" else torch.bfloat16
VOCAB, LEN, CLASSES = 64, 24, 4


def sequences(n, gen):
    labels = torch.randint(0, CLASSES, (n,), generator=gen)
    tokens = torch.randint(4, VOCAB, (n, LEN), generator=gen)
    pos = torch.randint(0, LEN, (n, 3), generator=gen)
    tokens.scatter_(1, pos, labels[:, None].expand(-1, 3))
    return tokens, labels


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 64)
        self.pos = nn.Parameter(torch.zeros(1, LEN, 64))
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(64, CLASSES)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens) + self.pos).mean(1))


def main():
    gen = torch.Generator().manual_seed(16)
    x, y = sequences(800, gen)
    xv, yv = sequences(400, gen)
    model = Encoder().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    warmup = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 30))
    scaler = torch.amp.GradScaler(amp_device, init_scale=2.0**12)
    for epoch in range(2):
        model.train()
        perm = torch.randperm(len(x))
        for i in range(0, len(x), 32):
            idx = perm[i: i + 32]
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type=amp_device, dtype=amp_dtype):
                loss = F.cross_entropy(model(x[idx].to(device)), y[idx].to(device))
            scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.unscale_(optimizer)
            scaler.step(optimizer)
            scaler.update()
            warmup.step()
        model.eval()
        with torch.no_grad():
            acc = (model(xv.to(device)).argmax(1).cpu() == yv).float().mean().item()
        print(f"epoch {epoch} loss {loss.item():.4f} val acc {acc:.3f}")


if __name__ == "__main__":
    main()
