"""Does mps_inplace_bug() break exactly what affected Macs broke, at the dispatcher (lesson 06)?"""

import contextlib
import pickle
import subprocess
import sys

import pytest
import torch
from torch import nn

from course_utils.labs.sae import TopKSAE, activations, batches, one_thread, sae_step
from course_utils.toolkit.emulate.inplace import (
    ADDC_OPS,
    AFFECTED,
    HEALTHY,
    RANDOM_OPS,
    active,
    addc_affected,
    known_bug_status,
    mps_inplace_bug,
    mps_random_bug,
    random_affected,
)


def transposed(*shape):
    """A tensor of ``shape`` stored transposed: same values as a fresh one, non-contiguous."""
    return torch.rand(*reversed(shape)).t()


def train_sae(optimizer, emulated, steps=100, tied=True):
    torch.manual_seed(0)
    model = TopKSAE(d_model=8, d_hidden=16, k=2, tied_init=tied)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt = optimizer(model.parameters())
    data = activations(512, 8, 12)
    with mps_inplace_bug(device="cpu") if emulated else contextlib.nullcontext(), one_thread():
        for xb in batches(data, steps, 64):
            sae_step(model, opt, xb)
    moved = {n: not torch.equal(p, before[n]) for n, p in model.named_parameters()}
    return model, opt, moved


ADAMS = {
    "default": lambda ps: torch.optim.Adam(ps, lr=1e-2),
    "foreach=False": lambda ps: torch.optim.Adam(ps, lr=1e-2, foreach=False),
    "foreach=True": lambda ps: torch.optim.Adam(ps, lr=1e-2, foreach=True),
}


@pytest.mark.parametrize("kind", ADAMS)
def test_does_adam_leave_the_transposed_encoder_bit_identical_after_100_steps_while_the_decoder_moves(kind):
    _, _, moved = train_sae(ADAMS[kind], emulated=True)
    assert moved == {"encoder.weight": False, "encoder.bias": True,
                     "decoder.weight": True, "decoder.bias": True}


@pytest.mark.parametrize("kind", ADAMS)
def test_does_adam_train_every_parameter_without_the_emulation_or_with_a_contiguous_encoder(kind):
    assert all(train_sae(ADAMS[kind], emulated=False, steps=20)[2].values())
    assert all(train_sae(ADAMS[kind], emulated=True, steps=20, tied=False)[2].values())


def test_does_sgd_train_the_transposed_encoder_under_the_emulation():
    sgd = lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9)  # noqa: E731
    assert all(train_sae(sgd, emulated=True, steps=20)[2].values())


def test_is_adams_exp_avg_sq_exactly_zero_for_the_encoder_while_exp_avg_is_not():
    model, opt, _ = train_sae(ADAMS["default"], emulated=True, steps=10)
    enc, dec = opt.state[model.encoder.weight], opt.state[model.decoder.weight]
    assert enc["exp_avg_sq"].abs().max() == 0 and enc["exp_avg"].abs().max() > 0
    assert dec["exp_avg_sq"].abs().max() > 0
    assert not enc["exp_avg_sq"].is_contiguous()  # zeros_like kept the transposed layout


@pytest.mark.parametrize("op", ADDC_OPS)
def test_is_a_non_contiguous_output_left_unchanged_not_zeroed(op):
    out = transposed(3, 4) + 1
    before = out.clone()
    with mps_inplace_bug(device="cpu") as bug:
        returned = getattr(out, op)(torch.rand(3, 4), torch.rand(3, 4) + 0.5)
    assert returned is out and torch.equal(out, before) and out.abs().min() > 0
    assert bug.dropped[op] == 1


@pytest.mark.parametrize("op", ADDC_OPS)
def test_are_contiguous_outputs_and_non_contiguous_inputs_untouched(op):
    out, a, b = torch.rand(3, 4), transposed(3, 4), transposed(3, 4) + 0.5
    expected = getattr(torch, op[:-1])(out, a, b)
    with mps_inplace_bug(device="cpu") as bug:
        getattr(out, op)(a, b)
    assert torch.allclose(out, expected) and not bug.dropped


def test_are_out_of_place_ops_lerp_and_mul_untouched_on_non_contiguous_tensors():
    x, y = transposed(3, 4), torch.rand(3, 4)
    with mps_inplace_bug(device="cpu"):
        assert torch.allclose(torch.addcmul(x, y, y), x + y * y)
        a, b = x.clone(), x.clone()
        a.lerp_(y, 0.5)
        b.mul_(2)
    assert torch.allclose(a, x + 0.5 * (y - x)) and torch.allclose(b, 2 * x)


def test_does_a_foreach_call_lose_only_the_writes_to_non_contiguous_tensors():
    good, bad = torch.zeros(2, 3), torch.zeros(3, 2).t()
    ones = [torch.ones(2, 3), torch.ones(2, 3)]
    with mps_inplace_bug(device="cpu") as bug:
        torch._foreach_addcmul_([good, bad], ones, ones, value=2.0)
    assert torch.equal(good, torch.full((2, 3), 2.0)) and torch.equal(bad, torch.zeros(2, 3))
    assert bug.dropped == {"_foreach_addcmul_": 1}


@pytest.mark.parametrize("op", RANDOM_OPS)
def test_does_the_random_variant_leave_non_contiguous_tensors_unchanged(op):
    args = {"random_": (0, 10), "bernoulli_": (0.5,)}.get(op, ())
    with mps_random_bug(device="cpu"):
        stuck = getattr(torch.zeros(10, 10).T, op)(*args)
        fine = getattr(torch.zeros(10, 10), op)(*args)
    assert stuck.abs().max() == 0 and fine.abs().max() > 0


def test_does_nn_init_silently_do_nothing_on_a_transposed_weight_under_the_random_variant():
    w = torch.zeros(4, 6).T
    with mps_random_bug(device="cpu"):
        nn.init.normal_(w)
    assert w.abs().max() == 0


def test_are_float64_tensors_untouched_because_mps_cannot_hold_them():
    out = torch.rand(3, 2, dtype=torch.float64).t()
    expected = torch.addcmul(out, out, out)
    with mps_inplace_bug(device="cpu"):
        out.addcmul_(out.clone(), out.clone())
    assert torch.allclose(out, expected)


def test_are_tensors_of_another_device_type_untouched():
    out = transposed(3, 4)
    before = out.clone()
    with mps_inplace_bug(device="meta"):  # plays a device these CPU tensors are not on
        out.addcmul_(torch.ones(3, 4), torch.ones(3, 4))
    assert torch.allclose(out, before + 1)


def test_is_the_emulation_gone_after_the_block_and_reported_while_active():
    with mps_inplace_bug(device="cpu") as bug:
        assert active() is bug and "emulated" in repr(bug)
    assert active() is None
    out = transposed(2, 2)
    out.addcmul_(torch.ones(2, 2), torch.ones(2, 2))
    assert out.min() >= 1


def test_is_a_name_that_is_not_an_in_place_op_refused():
    with pytest.raises(ValueError, match="in-place"):
        mps_inplace_bug(("addcmul",))


@pytest.mark.parametrize("torch_v, macos, addc, rand", [
    ("2.2.1", "14.4", True, True), ("2.3.1", "13.6", True, True), ("2.4.0", "14.5", False, True),
    # macOS 15 skips the gathering copy only in torch builds with PR #128393 (after 2.4): for the
    # story's torch 2.2.1 on macOS 15 the sources say nothing, so the answer is uncertain
    ("2.2.1", "15.0", None, None), ("2.4.0", "15.0", False, None), ("2.9.0", "15.2", False, None),
    ("2.10.0", "14.7", False, True), ("2.13.0", "14.7", False, None),
    ("2.10.0", "15.1", False, False), ("2.13.0", "26.1", False, False), ("2.2.1", None, None, None),
])
def test_does_the_version_rule_follow_the_sources(torch_v, macos, addc, rand):
    assert addc_affected(torch_v, macos) is addc
    assert random_affected(torch_v, macos) is rand


def test_does_known_bug_status_say_not_a_mac_here_and_state_uncertainty_on_a_mac():
    if sys.platform == "darwin":
        pytest.skip("on a Mac the status is the real one")
    here = known_bug_status(run_repro=True)
    assert "not a Mac: emulated" in str(here) and here.measured_addc is None
    mac = str(known_bug_status("2.12.0", "14.6"))
    assert "UNCERTAIN" in mac and "#165267" in mac and "not affected" in mac
    old_torch_new_macos = known_bug_status("2.2.1", "15.0")
    assert old_torch_new_macos.addc is None and "UNCERTAIN" in str(old_torch_new_macos)


def test_is_the_healthy_machine_labelled_by_the_fix_alone():
    """macOS 15 alone is not known to avoid the bug (an older torch has the gather path)."""
    assert HEALTHY.name == "healthy Mac (torch >= 2.4)" and "macOS" not in HEALTHY.name


def test_does_importing_course_utils_emulate_stay_cheap():
    code = ("import sys, course_utils.toolkit.emulate as e; "
            "assert 'course_utils.toolkit.emulate.inplace' not in sys.modules;"
            "from course_utils.toolkit.emulate import mps_inplace_bug, known_bug_status; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"


def test_is_a_machine_a_reusable_picklable_context_manager():
    machine = pickle.loads(pickle.dumps(AFFECTED))
    for _ in range(2):  # reusable
        out = transposed(2, 3)
        before = out.clone()
        with machine:
            with machine:  # and nestable
                out.addcmul_(torch.ones(2, 3), torch.ones(2, 3))
        assert torch.equal(out, before)
    with HEALTHY:
        out.addcmul_(torch.ones(2, 3), torch.ones(2, 3))
    assert torch.allclose(out, before + 1)


def test_does_known_bug_status_on_a_simulated_mac_report_what_the_real_repro_measured(monkeypatch):
    from course_utils.toolkit.emulate import inplace

    monkeypatch.setattr(inplace.platform, "mac_ver", lambda: ("14.4", ("", "", ""), "arm64"))
    monkeypatch.setattr(inplace.torch.backends.mps, "is_available", lambda: True)
    monkeypatch.setattr(inplace, "real_addcmul_repro", lambda device: True)
    monkeypatch.setattr(inplace, "real_random_repro", lambda device: False)
    status = known_bug_status("2.3.0", run_repro=True)
    assert status.on_mac and status.addc and status.measured_addc is True
    assert "measured on this Mac's mps, addcmul_ repro: bug SHOWS" in str(status)

    def cannot_allocate(device):
        raise RuntimeError("MPS backend out of memory")

    monkeypatch.setattr(inplace, "real_addcmul_repro", cannot_allocate)
    failed = known_bug_status("2.3.0", run_repro=True)
    assert failed.measured_addc is None and "out of memory" in str(failed)
