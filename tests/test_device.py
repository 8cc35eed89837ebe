"""Does the one place that chooses a device handle every MPS state (simulated here)?"""

import logging
from dataclasses import replace

import pytest
import torch
from torch import nn

from course_utils.toolkit import device as dev

HERE = dev.probe()
NOT_BUILT = replace(HERE, mps_built=False, mps_available=False, mps_allocates=None, accelerator=None)
UNAVAILABLE = replace(NOT_BUILT, mps_built=True)
MAC = replace(UNAVAILABLE, mps_available=True, mps_allocates=True, accelerator="mps")
RUNNER = replace(MAC, mps_allocates=False)
CUDA_BOX = replace(NOT_BUILT, accelerator="cuda")


def test_this_machine_is_probed_with_real_answers():
    assert HERE.torch_version == torch.__version__
    assert HERE.mps_built == torch.backends.mps.is_built()


@pytest.mark.parametrize("facts, state", [(NOT_BUILT, "not built"),
                                          (UNAVAILABLE, "built but unavailable"),
                                          (MAC, "available")])
def test_diagnose_reports_each_of_the_three_states_with_its_advice(facts, state):
    report = dev.diagnose(facts)
    assert report.mps_state == state and report.advice == dev.ADVICE[state]
    assert report.as_dict()["mps_state"] == state
    assert f"MPS                           {state}" in str(report)


def test_a_runner_that_claims_mps_but_cannot_allocate_is_called_out():
    assert "cannot allocate" in dev.diagnose(RUNNER).advice


@pytest.mark.parametrize("facts, prefer, expected, fell_back", [
    (NOT_BUILT, None, "cpu", False), (UNAVAILABLE, None, "cpu", False), (MAC, None, "mps", False),
    (RUNNER, None, "cpu", False), (CUDA_BOX, None, "cuda", False), (MAC, "cpu", "cpu", False),
    (NOT_BUILT, "mps", "cpu", True), (UNAVAILABLE, "mps", "cpu", True), (MAC, "cuda", "mps", True),
    (CUDA_BOX, "mps", "cuda", True), (CUDA_BOX, "cuda:0", "cuda", False), (MAC, "auto", "mps", False),
])
def test_decide_covers_every_state_and_preference(facts, prefer, expected, fell_back):
    choice = dev.decide(prefer, facts)
    assert choice.device.type == expected and choice.fell_back == fell_back
    if fell_back:
        assert prefer in choice.reason and "requested but" in choice.reason


def test_pick_device_logs_why_it_fell_back(caplog):
    with caplog.at_level(logging.INFO, logger="course_utils.toolkit.device"):
        assert dev.pick_device("mps", facts=NOT_BUILT) == torch.device("cpu")
    assert caplog.records[-1].levelno == logging.WARNING
    assert "mps requested but MPS is not built" in caplog.records[-1].getMessage()


def test_the_environment_override_forces_a_device(monkeypatch):
    monkeypatch.setenv(dev.DEVICE_VAR, "cpu")
    assert dev.pick_device(facts=MAC) == torch.device("cpu")


def test_require_same_device_names_both_devices():
    model = nn.Linear(2, 2)
    assert dev.require_same_device(model, torch.zeros(2)) == torch.device("cpu")
    with pytest.raises(dev.DeviceMismatchError, match="model is on cpu but input 1 is on meta"):
        dev.require_same_device(model, torch.zeros(2), torch.zeros(2, device="meta"))


def test_a_model_split_across_devices_is_an_error_of_its_own():
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2).to("meta"))
    with pytest.raises(dev.DeviceMismatchError, match="split across devices: cpu, meta"):
        dev.require_same_device(model)


def test_a_tensor_can_stand_in_for_the_model():
    with pytest.raises(dev.DeviceMismatchError):
        dev.require_same_device(torch.zeros(1), torch.zeros(1, device="meta"))


@pytest.mark.parametrize("at_import, now, enabled, words", [
    (None, None, False, "unset"),
    ("1", "1", True, "1 (set before import torch)"),
    (None, "1", False, "restart the kernel"),
    ("1", None, True, "restart the kernel"),
    ("0", "0", False, "0 (set before import torch)"),
    ("2", "2", True, "2 (set before import torch)"),
    ("-1", "-1", True, "-1 (set before import torch)"),
    ("00", "00", False, "00 (set before import torch)"),
    ("yes", "yes", False, "not an int"),
    ("4294967296", "4294967296", False, "most likely aborting import torch"),
])
def test_the_fallback_variable_is_judged_by_its_value_at_import(at_import, now, enabled, words):
    facts = replace(MAC, fallback_at_torch_import=at_import, fallback_now=now,
                    fallback_import_order_known=True)
    report = dev.diagnose(facts)
    assert report.fallback_enabled is enabled and words in report.fallback_note


@pytest.mark.parametrize("value, enabled", [
    (None, False), ("0", False), ("1", True), ("2", True), (" 3", True), ("1abc", True),
    ("-0", False), ("", None), ("true", None), ("on", None),
    ("2147483647", True), ("2147483648", None), ("-2147483649", None),  # stoi: out_of_range throws
])
def test_is_the_variable_read_as_std_stoi_reads_it(value, enabled):
    """MPSFallback.mm: ``std::stoi(v) == 0`` is off; any other integer is on; no integer throws."""
    assert dev.fallback_enabled_by(value) is enabled


def test_unknown_import_order_is_said_so():
    facts = replace(MAC, fallback_now="1", fallback_import_order_known=False)
    assert "import order unknown" in dev.diagnose(facts).fallback_note


def test_float64_works_on_cpu_and_the_summary_names_the_device(monkeypatch):
    monkeypatch.delenv(dev.DEVICE_VAR, raising=False)
    assert dev.float64_works("cpu") is True
    assert dev.summary(NOT_BUILT).endswith("device: cpu (no accelerator (MPS is not built); using cpu)")
