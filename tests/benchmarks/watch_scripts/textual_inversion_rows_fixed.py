"""Textual-inversion style training (as in the diffusers example): a frozen text encoder (token
embeddings, a GRU, a pooled projection) is taught one new placeholder token whose embedding row is
the only thing meant to train, by matching the pooled output of prompts that contain it to a
target "concept" vector. The whole embedding matrix is handed to AdamW (weight decay 1e-2) and the
gradients of every row except the new token's are zeroed after backward, so that "only the new
row learns". Fixed version: after every step the rows of the pretrained vocabulary are restored from their saved copy (the fix in the diffusers example), so only the new token's row changes.
Written from: https://github.com/huggingface/diffusers/issues/1009
expect: -
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
VOCAB, DIM = 200, 48


class TextEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.token_embedding = nn.Embedding(VOCAB + 1, DIM)
        self.rnn = nn.GRU(DIM, DIM, batch_first=True)
        self.proj = nn.Linear(DIM, 32)

    def forward(self, ids):
        out, _ = self.rnn(self.token_embedding(ids))
        return self.proj(out.mean(1))


def main():
    encoder = TextEncoder().to(device)
    for p in list(encoder.rnn.parameters()) + list(encoder.proj.parameters()):
        p.requires_grad_(False)
    placeholder = VOCAB
    gen = torch.Generator().manual_seed(4)
    concept = torch.randn(32, generator=gen).to(device)
    with torch.no_grad():
        encoder.token_embedding.weight[placeholder] = encoder.token_embedding.weight[7]
    original = encoder.token_embedding.weight.detach().clone()
    optimizer = torch.optim.AdamW(encoder.token_embedding.parameters(), lr=5e-3, weight_decay=1e-2)
    for step in range(300):
        prompts = torch.randint(0, VOCAB, (16, 8), generator=gen)
        prompts[:, int(torch.randint(0, 8, (1,), generator=gen))] = placeholder
        pooled = encoder(prompts.to(device))
        loss = F.mse_loss(pooled, concept.expand_as(pooled))
        optimizer.zero_grad()
        loss.backward()
        keep = torch.ones(VOCAB + 1, dtype=torch.bool, device=device)
        keep[placeholder] = False
        encoder.token_embedding.weight.grad[keep] = 0
        optimizer.step()
        with torch.no_grad():
            encoder.token_embedding.weight[keep] = original[keep]
        if step % 100 == 99:
            drift = (encoder.token_embedding.weight[:VOCAB] - original[:VOCAB]).norm() / original[:VOCAB].norm()
            print(f"step {step + 1} loss {loss.item():.4f} vocabulary drift {drift.item():.4f}")


if __name__ == "__main__":
    main()
