"""The training loop's mechanics: zero_grad, schedulers, train and eval modes, evaluation without
no_grad, the first NaN, a flat loss, accumulation, GANs, target networks, a GradScaler."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.watch_support import alarms, line_of, mlp, watched


def loop(*, zero_grad="step", scheduler_per_batch=False, eval_mode=False, steps_lr=0.05):
    def train(steps):
        model = nn.Sequential(nn.Linear(4, 16), nn.Dropout(0.2), nn.ReLU(), nn.Linear(16, 1))
        opt = torch.optim.SGD(model.parameters(), lr=steps_lr)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.1)
        x = torch.randn(32, 4)
        y = x.sum(1, keepdim=True)
        model.eval() if eval_mode else model.train()
        for _ in range(steps):
            if zero_grad == "step":
                opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            if zero_grad == "between":
                opt.zero_grad()
            opt.step()
            if scheduler_per_batch:
                sched.step()

    return train


def test_missing_zero_grad_is_named():
    assert "missing zero_grad" in alarms(watched(loop(zero_grad="never"), 6))
    assert not alarms(watched(loop(), 6))


CLIPS = {
    "norm": lambda params: nn.utils.clip_grad_norm_(params, max_norm=0.05),
    "value": lambda params: nn.utils.clip_grad_value_(params, clip_value=0.01),
    "by hand": lambda params: [p.grad.mul_(0.5) for p in params],
}


def clipped(*, zero_grad: str, scaler: bool = False, clip: str = "norm"):
    """Fresh batches each step; the gradients are unscaled (a GradScaler) and clipped in place
    between backward and the step, as most real training loops do."""
    def train(steps):
        model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        grad_scaler = torch.amp.GradScaler("cpu", enabled=scaler)
        for _ in range(steps):
            x = torch.randn(64, 8)
            y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
            if zero_grad != "never":
                opt.zero_grad(set_to_none=zero_grad == "none")
            grad_scaler.scale(F.cross_entropy(model(x), y)).backward()
            grad_scaler.unscale_(opt)
            CLIPS[clip](list(model.parameters()))
            grad_scaler.step(opt)
            grad_scaler.update()

    return train


@pytest.mark.parametrize("clip", sorted(CLIPS))
@pytest.mark.parametrize("scaler", [False, True])
def test_missing_zero_grad_is_named_when_clipping_changes_the_gradients_in_place(scaler, clip):
    assert "missing zero_grad" in alarms(watched(clipped(zero_grad="never", scaler=scaler, clip=clip), 6))


@pytest.mark.parametrize("clip", sorted(CLIPS))
@pytest.mark.parametrize("zero_grad", ["none", "zeros"])
@pytest.mark.parametrize("scaler", [False, True])
def test_gradients_cleared_then_clipped_are_quiet(zero_grad, scaler, clip):
    found = watched(clipped(zero_grad=zero_grad, scaler=scaler, clip=clip), 12)
    assert "missing zero_grad" not in found


def test_zero_grad_between_backward_and_step_is_named():
    assert "zero grad at step" in alarms(watched(loop(zero_grad="between"), 6))


def test_a_scheduler_stepped_per_batch_collapses_the_learning_rate():
    assert "lr collapse" in alarms(watched(loop(scheduler_per_batch=True), 40))


def cosine(make_scheduler):
    def train(steps):
        model, x = mlp(), torch.randn(32, 4)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        sched = make_scheduler(opt)
        for _ in range(steps):
            opt.zero_grad()
            F.mse_loss(model(x).squeeze(1), x.sum(1)).backward()
            opt.step()
            sched.step()  # per batch

    return train


def test_a_cosine_over_epochs_stepped_per_batch_is_named_though_its_lr_comes_back():
    found = watched(cosine(lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=5)), 40)
    assert "lr collapse" in alarms(found) and "T_max=5" in found["lr collapse"].what


@pytest.mark.parametrize("make", [
    lambda o: torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=5),  # restarts on purpose
    lambda o: torch.optim.lr_scheduler.OneCycleLR(o, max_lr=0.05, total_steps=40),  # made per batch
    lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=40),  # sized in steps
])
def test_schedules_meant_per_batch_are_quiet(make):
    assert "lr collapse" not in watched(cosine(make), 40)


def test_training_in_eval_mode_is_named():
    assert "eval mode" in alarms(watched(loop(eval_mode=True), 4))


def evaluate(train_mode: bool, no_grad: bool = True):
    def run(steps):
        model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.5), nn.Linear(8, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = torch.randn(32, 4), torch.randint(0, 2, (32,))
        for _ in range(steps):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
        if not train_mode:
            model.eval()
        with torch.no_grad() if no_grad else torch.enable_grad():
            kept = [model(batch) for batch in x.split(8)]  # evaluation
        return kept

    return run


def test_evaluating_in_train_mode_is_named_and_eval_mode_is_quiet():
    found = watched(evaluate(train_mode=True), 3)
    assert "train mode in eval" in alarms(found) and found["train mode in eval"].where.line == line_of(
        "evaluation"
    )
    assert not alarms(watched(evaluate(train_mode=False), 3))


def test_evaluating_with_neither_eval_nor_no_grad_is_named_at_the_evaluation_line():
    found = watched(evaluate(train_mode=True, no_grad=False), 3)
    assert {"train mode in eval", "grad in eval"} <= alarms(found)
    assert found["grad in eval"].where.line == line_of("evaluation")


def test_forwards_that_a_backward_uses_later_are_not_an_evaluation():
    def rollout(steps):  # a policy run once per action, trained after the episode; twin inputs
        policy = nn.Sequential(nn.Linear(4, 16), nn.Dropout(0.1), nn.Linear(16, 2))
        opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
        for _ in range(steps):
            log_probs = [torch.log_softmax(policy(torch.randn(1, 4)), -1)[0, 0] for _ in range(12)]
            left, right = policy(torch.randn(8, 4)), policy(torch.randn(8, 4))
            loss = -torch.stack(log_probs).sum() + F.mse_loss(left, right)
            opt.zero_grad()
            loss.backward()
            opt.step()

    assert not alarms(watched(rollout, 4))


def test_the_first_op_that_makes_nan_is_named_with_its_line():
    def train(steps, fixed=False):
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        counts = torch.tensor([[0.0, 1.0, 2.0], [3.0, 0.0, 1.0]])
        for _ in range(steps):
            feats = torch.log1p(counts) if fixed else torch.log(counts)  # log zero
            loss = model(feats).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

    found = watched(train, 3)
    assert "non-finite" in found and "log" in found["non-finite"].what
    assert found["non-finite"].where.line == line_of("log zero")
    assert not alarms(watched(lambda s: train(s, fixed=True), 3))


def test_a_manual_update_that_never_lands_gives_a_flat_loss():
    def train(steps, fixed=False):
        model, x = mlp(), torch.randn(32, 4)
        y = x.sum(1, keepdim=True)
        for _ in range(steps):
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    if fixed:
                        p -= 0.01 * p.grad
                        p.grad = None
                    else:
                        p = p - 0.01 * p.grad

    assert {"flat loss", "frozen"} & alarms(watched(train, 40))
    assert not alarms(watched(lambda s: train(s, fixed=True), 40))


def test_a_loss_that_reached_exactly_zero_is_not_a_flat_loss():
    """A separable task fit to the end: the cross-entropy underflows to exactly 0 at every check while
    the gradients are tiny but not zero. The loss is at its floor, not stuck."""
    def train(steps):
        model = nn.Linear(2, 2)
        x = torch.tensor([[1.0, 0.0], [0.0, 1.0]]).repeat(16, 1)
        y = torch.tensor([0, 1]).repeat(16)
        with torch.no_grad():
            model.weight.copy_(torch.tensor([[120.0, -120.0], [-120.0, 120.0]]))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(steps):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            model.weight.grad.add_(1e-12)  # non-zero, as a real run's round-off leaves them
            opt.step()
    assert "flat loss" not in alarms(watched(train, 120))


def test_evaluating_without_no_grad_is_named_and_with_it_quiet():
    found = watched(evaluate(train_mode=False, no_grad=False), 3)
    assert alarms(found) == {"grad in eval"} and found["grad in eval"].where.line == line_of("evaluation")
    assert "grad in eval" not in watched(evaluate(train_mode=False), 3)


def test_a_gan_whose_generator_loss_flows_through_the_discriminator_is_quiet():
    def train(steps):
        gen, disc = nn.Linear(4, 2), nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
        opt_g, opt_d = torch.optim.Adam(gen.parameters(), 1e-3), torch.optim.Adam(disc.parameters(), 1e-3)
        real = torch.randn(16, 2) + 2
        for _ in range(steps):
            fake = gen(torch.randn(16, 4))
            opt_d.zero_grad()
            d_loss = F.softplus(-disc(real)).mean() + F.softplus(disc(fake.detach())).mean()
            d_loss.backward()
            opt_d.step()
            opt_g.zero_grad()
            F.softplus(-disc(fake)).mean().backward()  # adds to the discriminator's gradients too
            opt_g.step()

    assert not alarms(watched(train, 8))


def test_gradient_accumulation_is_not_a_missing_zero_grad():
    def train(steps):
        model, x = mlp(), torch.randn(32, 4)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        running = 0.0
        for i in range(4 * steps):
            loss = F.mse_loss(model(x[i % 4 :: 4]).squeeze(1), x[i % 4 :: 4, 0]).div(4)
            loss.backward()
            running += loss.item()  # one logging read per micro-batch: four per optimizer step
            if i % 4 == 3:
                opt.step()
                opt.zero_grad()

    found = watched(train, 6)
    assert not alarms(found) and "note" not in found  # reads of the loss alone are logging


def test_gradients_that_overflow_under_a_grad_scaler_are_a_note():
    def train(steps):
        model, x = mlp(), torch.randn(32, 4)
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        scaler = torch.amp.GradScaler("cpu", init_scale=2.0**100)  # overflows, then backs off
        for _ in range(steps):
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.float16):
                loss = F.mse_loss(model(x).squeeze(-1), x.sum(1))
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()

    found = watched(train, 4)
    assert "non-finite" not in found and "GradScaler" in found["note"].what


def test_a_target_network_run_in_train_mode_under_no_grad_and_an_input_gradient_are_training():
    def train(steps):  # BYOL: an EMA target in train mode under no_grad; FGSM: eval + autograd.grad
        online = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 4))
        target = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 4)).requires_grad_(False)
        opt = torch.optim.SGD(online.parameters(), lr=1e-2)
        for _ in range(steps):
            x = torch.randn(16, 4, requires_grad=True)
            online.eval()
            for _ in range(2):  # two attack steps on the input
                (grad,) = torch.autograd.grad(online(x).pow(2).sum(), x)
                x = (x + 0.01 * grad.sign()).detach().requires_grad_(True)
            online.train()
            with torch.no_grad():
                t1, t2 = target(x), target(x.flip(0))
            loss = F.mse_loss(online(x), t1) + F.mse_loss(online(x.flip(0)), t2)
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                for pt, po in zip(target.parameters(), online.parameters(), strict=True):
                    pt.lerp_(po, 0.01)

    assert not alarms(watched(train, 6, deep_every=None))
