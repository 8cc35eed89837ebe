"""Voice-activity detection, frame by frame: utterances of different lengths (40-dim filterbank
features, 30-120 frames) are padded into a batch, a bidirectional GRU gives one speech/silence
logit per frame, and the loss is binary cross-entropy with logits against frame labels (1 =
speech, 0 = silence; padded frames are labelled 0). The loss function builds the frame mask from
the lengths and reports frame accuracy over real frames. Adam, gradient clipping at 5. Fixed version: the per-frame losses (reduction="none") are averaged over the real frames only, with the mask.
Written from: https://github.com/ServiceNow/Fast-LLM/issues/442
expect: -
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
MAXLEN = 120


def utterances(n, gen):
    lengths = torch.randint(30, MAXLEN + 1, (n,), generator=gen)
    feats = torch.zeros(n, MAXLEN, 40)
    labels = torch.zeros(n, MAXLEN)
    for i, length in enumerate(lengths.tolist()):
        speech = torch.zeros(length)
        start = int(torch.randint(0, length // 2, (1,), generator=gen))
        speech[start: start + int(torch.randint(5, length // 2, (1,), generator=gen))] = 1
        feats[i, :length] = torch.randn(length, 40, generator=gen) * 0.5 + speech[:, None] * torch.linspace(0.2, 1.0, 40)
        labels[i, :length] = speech
    return feats, labels, lengths


class FrameTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(40, 64)
        self.gru = nn.GRU(64, 48, batch_first=True, bidirectional=True)
        self.out = nn.Linear(96, 1)

    def forward(self, feats):
        hidden, _ = self.gru(torch.relu(self.inp(feats)))
        return self.out(hidden).squeeze(-1)


def frame_loss(logits, labels, lengths):
    mask = torch.arange(labels.shape[1], device=labels.device)[None, :] < lengths[:, None]
    per_frame = F.binary_cross_entropy_with_logits(logits, labels, reduction="none")
    loss = (per_frame * mask).sum() / mask.sum()
    accuracy = (((logits > 0).float() == labels) & mask).sum() / mask.sum()
    return loss, accuracy


def main():
    gen = torch.Generator().manual_seed(2)
    feats, labels, lengths = utterances(480, gen)
    model = FrameTagger().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for epoch in range(3):
        model.train()
        order = torch.randperm(len(feats))
        for i in range(0, len(order), 24):
            idx = order[i: i + 24]
            loss, acc = frame_loss(model(feats[idx].to(device)), labels[idx].to(device), lengths[idx].to(device))
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f} frame acc {acc.item():.3f}")


if __name__ == "__main__":
    main()
