"""Is a recurrent state fed back with its graph (no ``.detach()``, ``retain_graph=True``) named as
memory growth, with or without an op-by-op window, and are a detached state and a model fed another
model's output in the same step quiet?"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_utils.toolkit.watch import watch
from tests.watch_support import alarms, watched


class TinyLM(nn.Module):
    def __init__(self, dropout: float = 0.0):
        super().__init__()
        self.emb, self.rnn, self.out = nn.Embedding(12, 8), nn.GRU(8, 8), nn.Linear(8, 12)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, hidden):
        y, hidden = self.rnn(self.drop(self.emb(x)), hidden)
        return self.out(y), hidden


def lm_loop(detach: bool, dropout: float = 0.0, update: str = "manual"):
    """Truncated BPTT over a token stream, updated by hand (``p.data -= lr * grad``, as the classic
    word-language-model example does) or by torch.optim ("sgd")."""
    def train(steps):
        model = TinyLM(dropout)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        stream = torch.randint(0, 12, (6 * (steps + 1), 2))
        hidden = torch.zeros(1, 2, 8)
        for i in range(steps):
            x, y = stream[6 * i : 6 * i + 6], stream[6 * i + 1 : 6 * i + 7]
            hidden = hidden.detach() if detach else hidden
            model.zero_grad()
            logits, hidden = model(x, hidden)
            F.cross_entropy(logits.reshape(-1, 12), y.reshape(-1)).backward(retain_graph=not detach)
            if update == "sgd":
                opt.step()
            else:
                for p in model.parameters():
                    p.data -= 0.1 * p.grad
    return train


@pytest.mark.parametrize("dropout", [0.0, 0.2])
def test_a_hidden_state_carried_with_its_graph_is_memory_growth_and_a_detached_one_is_quiet(dropout):
    found = watched(lm_loop(detach=False, dropout=dropout), 24, deep_every=None)  # no window asked for
    assert "memory growth" in alarms(found), found
    assert "carries the autograd graph of an earlier step" in found["memory growth"].what
    assert "memory growth" not in alarms(watched(lm_loop(detach=True, dropout=dropout), 24, deep_every=None))


@pytest.mark.parametrize("deep_every", [1, None])
def test_with_an_in_place_optimizer_the_carried_graph_is_named_before_the_backward_fails(deep_every):
    torch.manual_seed(0)
    with pytest.raises(RuntimeError, match="inplace operation"):
        with watch(verbose=False, deep_every=deep_every) as w:
            lm_loop(detach=False, dropout=0.2, update="sgd")(24)
    assert "memory growth" in {f.kind for f in w.findings if f.alarm}


def test_a_model_fed_another_models_output_in_the_same_step_is_not_a_carried_graph():
    def train(steps):
        g, d = nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 1))
        opt = torch.optim.SGD([*g.parameters(), *d.parameters()], lr=0.01)
        for _ in range(steps):
            opt.zero_grad()
            d(g(torch.randn(8, 4))).mean().backward()
            opt.step()

    assert "memory growth" not in alarms(watched(train, 24))
