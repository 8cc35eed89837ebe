"""Character-level language model (embedding -> 2-layer GRU with dropout -> linear
decoder, weights tied between embedding and decoder) trained on a synthetic corpus
of sentences generated from a tiny grammar. Random windows of the corpus are used as
(input, next-char target) pairs. Every SAMPLE_EVERY steps the script switches to
model.eval(), and under torch.no_grad() samples ~50 characters one at a time with
torch.multinomial (temperature 0.8), reading each sampled index with .item() to
build the string, then returns to model.train(). Gradients are clipped before each
Adam step; the clip returns the pre-clip norm, which is logged.
expect: -
"""
import random
import torch
import torch.nn as nn
import torch.nn.functional as F

random.seed(5)
torch.manual_seed(5)
device = "cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available() else "cpu")

SUBJ = ["the cat", "a dog", "my robot", "the old man", "her parrot", "our team"]
VERB = ["eats", "sees", "builds", "likes", "paints", "finds"]
OBJ = ["a fish", "the moon", "red apples", "small boxes", "the river", "a song"]
ADV = ["today", "slowly", "again", "at night", "with joy", ""]


def make_corpus(n_sent=1500):
    out = []
    for _ in range(n_sent):
        s = f"{random.choice(SUBJ)} {random.choice(VERB)} {random.choice(OBJ)} {random.choice(ADV)}".strip()
        out.append(s + ". ")
    return "".join(out)


text = make_corpus()
vocab = sorted(set(text))
stoi = {c: i for i, c in enumerate(vocab)}
itos = {i: c for c, i in stoi.items()}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long, device=device)
V = len(vocab)


class CharRNN(nn.Module):
    def __init__(self, vocab_size, dim=48, layers=2, dropout=0.2):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.rnn = nn.GRU(dim, dim, num_layers=layers, dropout=dropout, batch_first=True)
        self.drop = nn.Dropout(dropout)
        self.decoder = nn.Linear(dim, vocab_size)
        self.decoder.weight = self.embed.weight  # weight tying

    def forward(self, idx, h=None):
        out, h = self.rnn(self.drop(self.embed(idx)), h)
        return self.decoder(self.drop(out)), h


@torch.no_grad()
def sample(model, prompt="the ", n_chars=50, temperature=0.8):
    model.eval()
    idx = torch.tensor([[stoi[c] for c in prompt]], device=device)
    logits, h = model(idx)
    chars = list(prompt)
    for _ in range(n_chars):
        probs = F.softmax(logits[:, -1] / temperature, dim=-1)
        nxt = torch.multinomial(probs, 1)
        chars.append(itos[nxt.item()])
        logits, h = model(nxt, h)
    model.train()
    return "".join(chars)


def get_batch(bs=24, seq=24):
    starts = torch.randint(0, len(data) - seq - 1, (bs,), device=device)
    offs = torch.arange(seq, device=device)
    x = data[starts[:, None] + offs]
    y = data[starts[:, None] + offs + 1]
    return x, y


model = CharRNN(V).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=4e-3)
STEPS, SAMPLE_EVERY, LOG_EVERY = 160, 80, 20

model.train()
for step in range(1, STEPS + 1):
    x, y = get_batch()
    logits, _ = model(x)
    loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    gnorm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()

    if step % LOG_EVERY == 0:
        print(f"step {step:3d}  loss {loss.item():.3f}  grad-norm(pre-clip) {gnorm.item():.2f}")
    if step % SAMPLE_EVERY == 0:
        print("   sample:", repr(sample(model)))
