"""Does the doctor pass here, keep MPS as INFO, and FAIL on a broken requirement?"""

import subprocess
import sys

from course_utils.course import doctor


def test_the_doctor_passes_on_this_machine_with_mps_as_info(capsys):
    assert doctor.main() == 0
    out = capsys.readouterr().out
    assert "[INFO] MPS: not built" in out or "[OK] MPS: available" in out
    assert "[FAIL]" not in out


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


def test_the_course_doctor_command_exits_zero_here():
    done = subprocess.run([sys.executable, "-m", "course_utils.cli", "doctor"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[OK] JupyterLab" in done.stdout
