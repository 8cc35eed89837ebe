"""Does ``course watch`` see what a loss receives: probabilities where it expects logits, a softmax
over the batch, padding scored as targets, targets that never vary? Each check runs a small loop with
the bug and with its fix; the finding states the numbers it saw."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pad_sequence

from course_utils.toolkit.watch import watch
from course_utils.toolkit.watch.loss_checks import made_by, padded_tail, probability_rows


def watched(train, steps: int = 8) -> dict:
    """{kind: finding} of ``train(steps)`` watched op by op at every step."""
    torch.manual_seed(0)
    with watch(verbose=False, deep_every=1) as w:
        train(steps)
    return {f.kind: f for f in w.findings if f.alarm}


def classifier_loop(mode: str = "logits"):
    """A 3-class (or 3-tag) classifier; ``mode`` names what goes wrong, or "logits" for the fix."""

    def train(steps):
        dims = {"softmax": 1, "softmax0": 0, "softmax1": 1}
        head = [nn.Softmax(dim=dims[mode])] if mode in dims else []
        model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3), *head)
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        for _ in range(steps):
            x = torch.randn(32, 6) * (4 if mode == "sigmoid twice" else 1)  # a spread of probabilities
            out = model(x)
            if mode in ("sigmoid twice", "tags", "gan", "narrow logits"):
                tags = torch.ones(32, 3) if mode == "gan" else (x[:, :3] > 0).float()
                scores = torch.sigmoid(out) if mode == "sigmoid twice" else out
                scores = 0.2 + 0.1 * torch.tanh(out) if mode == "narrow logits" else scores
                loss = F.binary_cross_entropy_with_logits(scores, tags)
            elif mode in ("softmax0", "softmax1"):
                loss = F.nll_loss(torch.log(out), x[:, :3].argmax(1))
            else:
                labels = (x[:, 0] * 0).long() if mode == "constant" else x[:, :3].argmax(1)
                loss = F.cross_entropy(out, labels)
            opt.zero_grad()
            loss.backward()
            opt.step()

    return train


def test_helpers_tell_probabilities_and_padding_apart():
    probs = torch.softmax(torch.randn(8, 5), 1)
    assert probability_rows(probs) and not probability_rows(torch.randn(8, 5))
    seqs = pad_sequence([torch.arange(1, n + 1) for n in (3, 7, 5, 9)], batch_first=True)
    assert padded_tail(seqs)[:2] == (0, 12)
    assert padded_tail(torch.arange(1, 41).view(4, 10)) is None  # no padding
    zeros_everywhere = (torch.rand(6, 20) < 0.5).float()  # a mask-like image: 0 is everywhere, not a pad
    assert padded_tail(zeros_everywhere) is None
    logits = torch.randn(4, 1, requires_grad=True)
    assert made_by(torch.sigmoid(logits).squeeze(1), "SigmoidBackward")
    assert not made_by(logits * 2, "SigmoidBackward")


def test_a_softmax_before_cross_entropy_is_named_with_what_the_loss_saw():
    found = watched(classifier_loop("softmax"))
    assert "probabilities as logits" in found
    assert "sum to 1" in found["probabilities as logits"].what
    assert "probabilities as logits" not in watched(classifier_loop())


def test_a_sigmoid_before_bce_with_logits_is_named_and_logits_are_quiet():
    assert "probabilities as logits" in watched(classifier_loop("sigmoid twice"))
    assert "probabilities as logits" not in watched(classifier_loop("tags"))
    # logits that happen to lie in [0, 1] (a discriminator's, early on) are not probabilities
    assert "probabilities as logits" not in watched(classifier_loop("narrow logits"))


def test_a_softmax_over_the_batch_is_named_and_over_classes_is_quiet():
    found = watched(classifier_loop("softmax0"))
    assert "softmax over batch" in found and "batch of 32" in found["softmax over batch"].what
    assert "softmax over batch" not in watched(classifier_loop("softmax1"))


def test_targets_that_never_vary_are_named_but_targets_built_as_constants_are_not():
    found = watched(classifier_loop("constant"))
    assert "constant targets" in found and "all 0" in found["constant targets"].what
    assert "constant targets" not in watched(classifier_loop())
    # a GAN's "real" labels are built with torch.ones on purpose
    assert "constant targets" not in watched(classifier_loop("gan"))


def lm_loop(*, ignore: bool = True, reduction: str = "mean", masked: bool = True, regression: bool = False):
    def train(steps):
        model = nn.Sequential(nn.Embedding(12, 8), nn.Linear(8, 12))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(steps):
            seqs = pad_sequence([torch.randint(1, 12, (int(n),)) for n in torch.randint(3, 12, (8,))],
                                batch_first=True)
            x, y = seqs[:, :-1], seqs[:, 1:]
            logits = model(x)
            if regression:
                target = y.float() + 0.5 * (y > 0)
                target = target * (y > 0)
                loss = F.mse_loss(logits[..., 0], target)
            elif reduction == "none":
                per_token = F.cross_entropy(logits.transpose(1, 2), y, reduction="none")
                mask = (y > 0).float()
                loss = (per_token * mask).sum() / mask.sum() if masked else per_token.mean()
            else:
                pad = 0 if ignore else -100
                loss = F.cross_entropy(logits.reshape(-1, 12), y.reshape(-1), ignore_index=pad)
            opt.zero_grad()
            loss.backward()
            opt.step()

    return train


@pytest.mark.parametrize(
    "bug", [dict(ignore=False), dict(reduction="none", masked=False), dict(regression=True)]
)
def test_padding_scored_by_the_loss_is_named(bug):
    found = watched(lm_loop(**bug))
    assert "padding in loss" in found
    assert "padding" in found["padding in loss"].what and "%" in found["padding in loss"].what


@pytest.mark.parametrize("fixed", [dict(), dict(reduction="none", masked=True)])
def test_padding_ignored_or_masked_is_quiet(fixed):
    assert "padding in loss" not in watched(lm_loop(**fixed))


def nll_loop(head: str):
    """nll_loss on a 4-class model whose output is ``head``: "log_softmax" (the fix), "softmax",
    "logits", or log(softmax + 1e-8) (log-probabilities too)."""
    def train(steps):
        model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        for _ in range(steps):
            x = torch.randn(64, 6)
            out = model(x)
            scores = {"log_softmax": F.log_softmax(out, 1), "softmax": F.softmax(out, 1), "logits": out,
                      "log eps": torch.log(F.softmax(out, 1) + 1e-8)}[head]
            loss = F.nll_loss(scores, x[:, :4].argmax(1))
            opt.zero_grad()
            loss.backward()
            opt.step()
    return train


@pytest.mark.parametrize("head", ["softmax", "logits"])
def test_nll_loss_given_probabilities_or_raw_logits_is_named_with_what_it_received(head):
    found = watched(nll_loop(head), 3)
    assert "not log-probabilities" in found and "probabilities as logits" not in found, found
    what = found["not log-probabilities"].what
    assert ("sum to 1" in what and "[-1, 0]" in what) if head == "softmax" else "logsumexp" in what, what


@pytest.mark.parametrize("head", ["log_softmax", "log eps"])
def test_nll_loss_given_log_probabilities_is_quiet(head):
    assert "not log-probabilities" not in watched(nll_loop(head), 3)
