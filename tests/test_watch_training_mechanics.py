"""Does ``course watch`` see the training mechanics that go wrong without an error: a
DistributedSampler that repeats its order every epoch, labels that no longer belong to their inputs
(the loss ends at chance), a padding mask built but left out of the loss, parameters frozen by
zeroing their gradients that the optimizer still moves, and a warm-up sized in steps but stepped per
epoch? Each check runs a small loop with the bug and with its fix; the finding states its numbers."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from course_utils.toolkit.watch import watch
from course_utils.toolkit.watch.cost_budget import Budget
from course_utils.toolkit.watch.loss_checks import padding_mask


def watched(train, **options) -> dict:
    """{kind: finding} of ``train()``: the alarms only. The budget has no limit: these checks judge
    check-step values, and on a slow or busy box a spent budget skips check steps (the budget's own
    tests are in test_watch_budget.py)."""
    torch.manual_seed(0)
    options.setdefault("cost", Budget(share=math.inf))
    with watch(verbose=False, **options) as w:
        train()
    return {f.kind: f for f in w.findings if f.alarm}


def sampler_loop(set_epoch: bool):
    def train():
        data = TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
        sampler = DistributedSampler(data, num_replicas=1, rank=0, shuffle=True)
        model = nn.Linear(4, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            if set_epoch:
                sampler.set_epoch(epoch)
            for x, y in DataLoader(data, batch_size=16, sampler=sampler):
                opt.zero_grad()
                F.cross_entropy(model(x), y).backward()
                opt.step()
    return train


def test_a_sampler_iterated_with_one_epoch_value_is_the_same_order_and_set_epoch_is_quiet():
    found = watched(sampler_loop(False))
    assert "same order" in found and "3 times, each time with epoch=0" in found["same order"].what
    assert "same order" not in watched(sampler_loop(True))


def labels_loop(apart: bool, steps: int = 160):
    """Fresh batches of 1024 every step (nothing to memorise): labels drawn from the inputs, or apart
    from them with the same class frequencies."""
    def train():
        model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        for _ in range(steps):
            x = torch.randn(1024, 8)
            source = torch.randn(1024, 8) if apart else x
            labels = (source[:, 0] > 0).long() + (source[:, 1] > 0).long()
            loss = F.cross_entropy(model(x), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return train


def test_labels_apart_from_their_inputs_end_the_run_at_chance_and_aligned_labels_are_quiet():
    found = watched(labels_loop(True))
    assert "loss at chance" in found, found
    assert "3 classes" in found["loss at chance"].what and "entropy" in found["loss at chance"].what
    assert "loss at chance" not in watched(labels_loop(False))
    assert "loss at chance" not in watched(labels_loop(True, steps=60))  # too short a run to judge


def folds_loop(apart: bool, folds: int = 4, steps: int = 40, new_model: bool = True):
    """Cross-validation: a fresh model and optimizer per fold, each trained ``steps`` steps on labels
    that follow their inputs (or apart from them); ``new_model=False``: one model, a fresh optimizer
    per fold."""
    def train():
        model = None
        for _ in range(folds):
            if new_model or model is None:
                model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
            opt = torch.optim.SGD(model.parameters(), lr=0.05)
            for _ in range(steps):
                x = torch.randn(1024, 8)
                source = torch.randn(1024, 8) if apart else x
                loss = F.cross_entropy(model(x), (source[:, 0] > 0).long() + (source[:, 1] > 0).long())
                opt.zero_grad()
                loss.backward()
                opt.step()
    return train


def test_a_new_model_per_fold_starts_the_chance_count_again_and_a_new_optimizer_does_not():
    """The last fold's first steps are at chance by nature: judged as the run's last steps they read
    as a model that never learnt (160 steps in all). A new optimizer over the same model goes on
    counting, so labels apart from their inputs are still found."""
    assert "loss at chance" not in watched(folds_loop(False))
    assert "loss at chance" not in watched(folds_loop(True))  # 40 steps a model: too short to judge
    found = watched(folds_loop(True, new_model=False))
    assert "loss at chance" in found and "since step" not in found["loss at chance"].what, found
    last = watched(folds_loop(True, folds=2, steps=120))
    assert "since step 12" in last["loss at chance"].what, last  # the second model began at step ~121


def chance_verdict(counts: list[int], late_losses: list[float]) -> list:
    """The chance check's verdict on a run of 200 steps whose labels had ``counts`` per class and
    whose last checked losses were ``late_losses``."""
    from types import SimpleNamespace

    from course_utils.toolkit.watch.chance import ChanceLevel

    found: list = []
    level = ChanceLevel(SimpleNamespace(step=200, log=SimpleNamespace(add=found.append)))
    level.counts, level.direct, level.site = torch.tensor(counts, dtype=torch.float64), True, "train.py:9"
    level.losses.extend((150 + 16 * i, v) for i, v in enumerate(late_losses))
    level.finish()
    return found


def test_one_checked_batch_far_below_what_chance_can_score_shows_a_model_that_learns():
    even = [500, 500]  # entropy ln 2 = 0.693
    assert chance_verdict(even, [0.70, 0.69, 0.68])  # every batch at chance
    assert not chance_verdict(even, [0.77, 0.78, 0.45])  # mean 0.667 at chance, one batch far below
    skewed = [900, 100]  # entropy 0.325; a batch of the frequent class alone scores -ln 0.9 = 0.105
    assert chance_verdict(skewed, [0.45, 0.40, 0.12])  # a lucky batch of a model at chance
    assert not chance_verdict(skewed, [0.45, 0.40, 0.05])  # below any batch a model at chance scores


def tagger_loop(masked: bool, mask_first: bool = True):
    """Tags where 0 is both the padding and the most common real tag: only the mask tells them apart."""
    def train():
        embed, head = nn.Embedding(20, 8), nn.Linear(8, 3)
        opt = torch.optim.Adam([*embed.parameters(), *head.parameters()], lr=1e-2)
        for _ in range(4):
            lengths = torch.randint(3, 10, (6,))
            words = torch.randint(1, 20, (6, 10))
            tags = torch.where(words % 5 == 0, words % 3, torch.zeros_like(words))
            real = torch.arange(10)[None, :] < lengths[:, None]
            tags = tags * real
            logits = head(embed(words))
            per_token = F.cross_entropy(logits.transpose(1, 2), tags, reduction="none")
            loss = (per_token * real).sum() / real.sum() if masked else per_token.mean()
            if not mask_first:
                loss = F.cross_entropy(logits.transpose(1, 2), tags)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return train


def test_a_padding_mask_left_out_of_the_loss_is_padding_in_loss_and_a_used_mask_is_quiet():
    found = watched(tagger_loop(False), deep_every=1)
    assert "padding in loss" in found and "never applied" in found["padding in loss"].what
    assert "padding in loss" in watched(tagger_loop(False, mask_first=False), deep_every=1)
    assert "padding in loss" not in watched(tagger_loop(True), deep_every=1)
    real = padding_mask(torch.arange(6)[None, :] < torch.tensor([[2], [5], [6]]))
    assert real is not None and int(real.sum()) == 13
    assert padding_mask(torch.rand(3, 6) < 0.5) is None  # not a padding mask: True and False mixed


def frozen_loop(how: str):
    """A backbone meant to stay fixed: "zeroed" (gradients zeroed, AdamW holds it), "kept" (zero-filled
    gradients left by set_to_none=False), or "out" (the optimizer holds only the head: the fix); or
    "idle": a branch that backward itself gives zero gradients (an expert no token was routed to),
    which AdamW's decay and momentum move by design."""
    def train():
        backbone, head, idle = nn.Linear(6, 8), nn.Linear(8, 2), nn.Linear(6, 2)
        params = [*head.parameters()] if how == "out" else [*backbone.parameters(), *head.parameters()]
        params += [*idle.parameters()] if how == "idle" else []
        opt = torch.optim.AdamW(params, lr=1e-2, weight_decay=0.05)
        for step in range(20):
            if how == "kept" and step == 5:
                backbone.requires_grad_(False)
            opt.zero_grad(set_to_none=how != "kept")
            x = torch.randn(16, 6)
            logits = head(torch.relu(backbone(x))) + (0.0 * idle(x) if how == "idle" else 0.0)
            F.cross_entropy(logits, torch.randint(0, 2, (16,))).backward()
            if how in ("zeroed", "out"):
                for p in backbone.parameters():
                    p.grad.zero_()
            opt.step()
    return train


def test_zeroed_gradients_that_still_move_are_decayed_while_frozen_and_out_or_idle_ones_are_quiet():
    for how in ("zeroed", "kept"):
        found = watched(frozen_loop(how))
        assert "decayed while frozen" in found, (how, found)
        assert "all zeros at 3 checked steps" in found["decayed while frozen"].what
    quiet = watched(frozen_loop("out"))
    assert "decayed while frozen" not in quiet and "not in optimizer" not in quiet, quiet
    idle = watched(frozen_loop("idle"))
    assert "decayed while frozen" not in idle, idle


def rows_loop(restore: bool):
    """Only the last embedding row is meant to train (textual inversion)."""
    def train():
        embed = nn.Embedding(201, 4)
        keep = torch.ones(201, dtype=torch.bool)
        keep[-1] = False
        original = embed.weight.detach().clone()
        opt = torch.optim.AdamW(embed.parameters(), lr=1e-2, weight_decay=1e-2)
        for _ in range(8):
            ids = torch.randint(0, 200, (4, 5))
            ids[:, 0] = 200
            opt.zero_grad()
            embed(ids).pow(2).mean().backward()
            embed.weight.grad[keep] = 0
            opt.step()
            if restore:
                with torch.no_grad():
                    embed.weight[keep] = original[keep]
    return train


def test_embedding_rows_without_gradients_that_decay_are_named_and_restored_rows_are_quiet():
    found = watched(rows_loop(False))
    assert "decayed while frozen" in found and "1 of its 201 rows" in found["decayed while frozen"].what
    assert "decayed while frozen" not in watched(rows_loop(True))


def warmup_loop(per_step: bool):
    def train():
        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scheduler = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 60))
        for step in range(80):
            opt.zero_grad()
            F.mse_loss(model(torch.randn(8, 4)), torch.randn(8, 1)).backward()
            opt.step()
            if per_step or step % 10 == 9:
                scheduler.step()
    return train


def test_a_step_sized_warm_up_stepped_per_epoch_is_named_and_stepped_per_step_is_quiet():
    found = watched(warmup_loop(False))
    assert "lr schedule" in found and "called 7 times in 80 optimizer steps" in found["lr schedule"].what
    assert "lr schedule" not in watched(warmup_loop(True))
