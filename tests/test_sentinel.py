"""Does the training sentinel catch the silent bugs, quickly, and stay quiet on healthy runs (lesson 06)?"""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_utils.labs.sae import TopKSAE, activations, batches, make_optimizer, one_thread, sae_step
from course_utils.toolkit.emulate.inplace import mps_inplace_bug
from course_utils.toolkit.sentinel import Sentinel

DATA = activations(512, 8, 12)


def sae(tied=True):
    torch.manual_seed(0)
    return TopKSAE(d_model=8, d_hidden=16, k=2, tied_init=tied)


def run(model, optimizer, steps, sentinel, step=sae_step):
    with one_thread():  # tiny tensors: a thread pool on a busy machine only adds waiting
        for xb in batches(DATA, steps, 64):
            sentinel.step(step(model, optimizer, xb))
    return {(f.kind, f.name): f.step for f in sentinel.findings}


def test_does_it_flag_the_frozen_encoder_within_two_steps_under_the_emulation():
    model = sae()
    opt = make_optimizer(model)
    with mps_inplace_bug(device="cpu"):
        found = run(model, opt, 5, Sentinel(model, opt, verbose=False))
    assert found[("frozen", "encoder.weight")] <= 2
    assert found[("zero state", "state[encoder.weight].exp_avg_sq")] <= 2
    assert found[("non-contiguous", "encoder.weight")] == 1
    assert not any(name.startswith("decoder") for _, name in found)


def test_does_it_say_the_layout_finding_is_emulated():
    model = sae()
    opt = make_optimizer(model)
    with mps_inplace_bug(device="cpu"):
        sentinel = Sentinel(model, opt, verbose=False)
        run(model, opt, 1, sentinel)
    assert "(emulated)" in str(sentinel)


@pytest.mark.parametrize("kind", ["adam", "adam-foreach", "sgd"])
def test_is_it_quiet_on_a_healthy_run(kind):
    model = sae(tied=False)
    opt = make_optimizer(model, kind)
    sentinel = Sentinel(model, opt, verbose=False)
    run(model, opt, 40, sentinel)
    assert sentinel.ok and sentinel.checked == 10 + 8  # steps 1-10, then 12, 16, ..., 40


def test_is_it_quiet_about_layout_where_the_bug_does_not_exist():
    model = sae()  # transposed encoder, but no emulation and not an affected Mac
    opt = make_optimizer(model)
    sentinel = Sentinel(model, opt, verbose=False)
    run(model, opt, 3, sentinel)
    assert sentinel.ok


def test_does_a_warm_up_with_lr_0_at_the_first_step_not_look_frozen():
    model = sae(tied=False)
    opt = make_optimizer(model)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, s / 3))
    sentinel = Sentinel(model, opt, verbose=False)
    for xb in batches(DATA, 6, 64):
        sentinel.step(sae_step(model, opt, xb))
        sched.step()
    assert sentinel.ok


def test_is_a_parameter_frozen_on_purpose_not_reported():
    model = sae(tied=False)
    model.encoder.requires_grad_(False)
    opt = make_optimizer(model)
    sentinel = Sentinel(model, opt, verbose=False)
    run(model, opt, 5, sentinel)
    assert sentinel.ok


def test_does_it_report_a_nan_loss_and_nan_parameters():
    model = sae(tied=False)
    opt = make_optimizer(model)
    sentinel = Sentinel(model, opt, verbose=False)
    with torch.no_grad():
        model.decoder.bias[0] = float("nan")
    found = run(model, opt, 2, sentinel)
    assert ("non-finite", "loss") in found and ("non-finite", "decoder.bias") in found


def test_does_it_notice_gradients_growing_when_zero_grad_is_missing():
    def no_zero_grad(model, opt, xb):
        loss = F.mse_loss(model(xb), xb)
        loss.backward()  # gradients accumulate from step to step
        opt.step()
        return loss.detach()

    model = sae(tied=False)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    found = run(model, opt, 10, Sentinel(model, opt, verbose=False), step=no_zero_grad)
    assert ("growing grads", "gradients") in found


def test_does_it_notice_training_in_eval_mode():
    model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.1)).eval()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    found = run(model, opt, 2, Sentinel(model, opt, verbose=False))
    assert ("eval mode", "model") in found


def test_does_every_n_check_only_every_n_steps_after_the_warm_up():
    model = sae(tied=False)
    opt = make_optimizer(model)
    sentinel = Sentinel(model, opt, every=5, warmup=0, verbose=False)
    run(model, opt, 20, sentinel)
    assert sentinel.checked == 4


def test_does_it_print_each_finding_once(capsys):
    model = sae()
    opt = make_optimizer(model)
    with mps_inplace_bug(device="cpu"):
        run(model, opt, 6, Sentinel(model, opt, checks=("frozen",)))
    lines = capsys.readouterr().out.splitlines()
    assert lines == [line for line in lines if "FROZEN encoder.weight" in line] and len(lines) == 1


def test_are_unknown_checks_refused():
    model = sae()
    with pytest.raises(ValueError, match="unknown checks"):
        Sentinel(model, make_optimizer(model), checks=("frozen", "vibes"))
