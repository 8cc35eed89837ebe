"""Word-level GRU language model on a synthetic Markov-chain corpus, trained with
truncated back-propagation through time in the style of the classic PyTorch
word_language_model example: the corpus is batchified into parallel streams, the
hidden state is carried from one BPTT chunk to the next (and repackaged so that
gradients stop at the chunk boundary), the encoder and decoder weights are tied,
gradients are clipped and the parameters are updated by hand with plain SGD whose
learning rate is annealed when validation perplexity stops improving.

expect: -
"""
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(1234)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"

# ----------------------------------------------------------------------------- data
NTOKENS = 60


def make_corpus(n_tokens, seed):
    """Sample a token stream from a sparse random first-order Markov chain."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(NTOKENS, NTOKENS, generator=g) * 3.0
    trans = F.softmax(logits, dim=-1)
    toks = torch.empty(n_tokens, dtype=torch.long)
    toks[0] = 0
    for i in range(1, n_tokens):
        toks[i] = torch.multinomial(trans[toks[i - 1]], 1, generator=g)
    return toks


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous().to(device)


corpus = make_corpus(5_000, seed=7)
split = int(0.9 * len(corpus))
train_data = batchify(corpus[:split], 16)   # (seq_len, 16)
val_data = batchify(corpus[split:], 10)

BPTT = 20


def get_batch(source, i):
    seq_len = min(BPTT, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].reshape(-1)
    return data, target


# ---------------------------------------------------------------------------- model
class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.2, tie_weights=True):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.GRU(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            assert nhid == ninp
            self.decoder.weight = self.encoder.weight
        self.nlayers, self.nhid = nlayers, nhid
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, inp, hidden):
        emb = self.drop(self.encoder(inp))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.decoder.out_features)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


model = RNNModel(NTOKENS, 32, 32, 2).to(device)
criterion = nn.NLLLoss()
lr = 8.0
CLIP = 0.25
LOG_INTERVAL = 5


def evaluate(data_source, bsz):
    model.eval()
    total = 0.0
    hidden = model.init_hidden(bsz)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, BPTT):
            data, targets = get_batch(data_source, i)
            output, hidden = model(data, hidden)
            total += len(data) * criterion(output, targets)
    return total.item() / (len(data_source) - 1)


def train_epoch(epoch):
    model.train()
    total_loss = torch.zeros((), device=device)
    start = time.time()
    hidden = model.init_hidden(16)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, BPTT)):
        data, targets = get_batch(train_data, i)
        # Starting each batch, we detach the hidden state from how it was previously produced.
        hidden = repackage_hidden(hidden)
        model.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()

        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)

        total_loss += loss.detach()
        if batch % LOG_INTERVAL == 0 and batch > 0:
            cur_loss = total_loss.item() / LOG_INTERVAL
            elapsed = time.time() - start
            print(f"| epoch {epoch:2d} | {batch:4d} batches | lr {lr:5.2f} | "
                  f"ms/batch {elapsed * 1000 / LOG_INTERVAL:6.2f} | loss {cur_loss:5.2f} | "
                  f"ppl {math.exp(cur_loss):7.2f}")
            total_loss.zero_()
            start = time.time()


best_val = None
for epoch in range(1, 9):
    epoch_start = time.time()
    train_epoch(epoch)
    val_loss = evaluate(val_data, 10)
    print("-" * 80)
    print(f"| end of epoch {epoch:2d} | time {time.time() - epoch_start:5.2f}s | "
          f"valid loss {val_loss:5.2f} | valid ppl {math.exp(val_loss):7.2f}")
    print("-" * 80)
    if best_val is None or val_loss < best_val:
        best_val = val_loss
    else:
        lr /= 4.0
