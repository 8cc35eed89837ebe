"""Does the doctor judge each MPS state right (states injected, so every machine tests all of them),
print well-formed lines here, and FAIL on a broken requirement?"""

import re
import subprocess
import sys
from dataclasses import replace

import pytest

from course_utils.learner import doctor
from course_utils.toolkit import device

HERE = device.probe()
NOT_BUILT = replace(HERE, mps_built=False, mps_available=False, mps_allocates=None, accelerator=None)
UNAVAILABLE = replace(NOT_BUILT, mps_built=True)
MAC = replace(UNAVAILABLE, mps_available=True, mps_allocates=True, accelerator="mps")
RUNNER = replace(MAC, mps_allocates=False)  # a hosted macOS runner: "available", cannot allocate
LINE = re.compile(r"\[(OK|FAIL|INFO)\] [^:\n]+: .+")


def mps_line(facts) -> doctor.Line:
    (line,) = [line for line in doctor.check_torch(facts) if line.name == "MPS"]
    return line


@pytest.mark.parametrize("facts, status, state", [
    (NOT_BUILT, "INFO", "not built"),
    (UNAVAILABLE, "INFO", "built but unavailable"),
    (MAC, "OK", "available"),
    (RUNNER, "INFO", "available"),
], ids=["not built", "built but unavailable", "available", "available but cannot allocate"])
def test_each_mps_state_is_ok_only_when_usable_and_never_a_fail(facts, status, state):
    line = mps_line(facts)
    assert (line.status, line.detail.split(":")[0]) == (status, state)
    assert line.detail.endswith(device.diagnose(facts).advice)


@pytest.mark.parametrize("facts", [NOT_BUILT, UNAVAILABLE, MAC, RUNNER],
                         ids=["not built", "built but unavailable", "available", "cannot allocate"])
def test_no_mps_state_makes_the_doctor_exit_non_zero(facts, monkeypatch, capsys):
    monkeypatch.setattr(doctor, "CHECKS", [lambda: doctor.check_torch(facts)])
    assert doctor.main() == 0
    assert "[FAIL]" not in capsys.readouterr().out


def test_on_this_machine_every_line_is_well_formed_and_the_exit_follows_the_fails(capsys):
    code = doctor.main()
    lines = capsys.readouterr().out.strip().splitlines()
    report, total = lines[:-2], lines[-1]
    assert all(LINE.fullmatch(line) for line in report), report
    assert lines[-2] == ""
    fails = [line for line in report if line.startswith("[FAIL]")]
    assert code == (1 if fails else 0)
    assert total.startswith(f"{len(report) - len(fails)} of {len(report)} fine")
    (mps,) = [line for line in report if line.split("] ")[1].startswith("MPS:")]
    assert mps.startswith(("[OK] MPS: available", "[INFO] MPS: "))
    assert any(state in mps for state in device.ADVICE)


def test_a_missing_widgets_extension_is_a_fail_and_a_non_zero_exit(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(doctor, "labextension_dirs", lambda: [tmp_path])
    assert doctor.main() == 1
    out = capsys.readouterr().out
    assert "[FAIL] ipywidgets lab extension: not found" in out and "fix: ipywidgets lab extension" in out


def test_a_missing_package_is_a_fail_with_the_install_line():
    line = doctor._package("surely-not-installed-pkg", "ghost", 1)
    assert line.status == "FAIL" and "pip install 'surely-not-installed-pkg>=1'" in line.detail


def test_an_old_package_is_a_fail():
    assert doctor._package("pytest", "pytest", 999).status == "FAIL"


def test_a_missing_test_tool_is_info_not_a_fail():
    line = doctor._test_tool("surely-not-installed-pkg", "ghost")
    assert line.status == "INFO" and "only the tests need it" in line.detail
    assert doctor._test_tool("pytest", "pytest").status == "OK"


def test_the_course_doctor_command_exits_zero_in_the_set_up_environment():
    """The test environment is the set-up one: every requirement there must be met."""
    done = subprocess.run([sys.executable, "-m", "course_utils.cli", "doctor"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[OK] JupyterLab" in done.stdout
