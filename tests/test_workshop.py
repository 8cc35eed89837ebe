"""The workshop tools without a hub: `course hub-config`'s files, the learner launcher
(course_utils/jupyter/hub.py prepare), `course collect` and `course grade --lms`'s CSV.
tests/test_hub.py runs them all on a real JupyterHub."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from traitlets.config import Config

from course_utils.cli import main
from course_utils.grader.batch import Graded, Options
from course_utils.grader.gradebook import Row
from course_utils.grader.judging import Verdict
from course_utils.grader.lms import LmsFile
from course_utils.grader.outputs import GradebookFiles
from course_utils.instructor import collect
from course_utils.jupyter import hub
from tests.conftest import ROOT

LAUNCHER = ROOT / "course_utils" / "jupyter" / "hub.py"


@pytest.mark.parametrize("flavour", hub.FLAVOURS)
def test_every_flavour_runs_the_launcher_in_the_course_environment(flavour):
    files = hub.config_files(flavour)
    text = "\n".join(files.values())
    assert "course_utils/jupyter/hub.py\", \"prepare\"" in text and "jupyterhub-singleuser" in text
    assert hub.START_URL in text and hub.FOLDER in text
    for name, body in files.items():
        if name.endswith(".py"):
            compile(body, name, "exec")
        elif name.endswith(".yaml"):
            single = yaml.safe_load(body)["singleuser"]
            assert single["cmd"][1:3] == ["/opt/mps-detective/course_utils/jupyter/hub.py", "prepare"]
            assert single["notebookDir"] == "~/mps-detective"
        elif name.endswith(".sh"):
            assert subprocess.run(["sh", "-n"], input=body, text=True).returncode == 0
            assert "constraints.txt" in body and "tljh-config reload" in body


def test_the_plain_config_points_at_this_environment_and_checkout():
    config = Config()
    exec(hub.config_files("plain")["jupyterhub_config.py"], {"get_config": lambda: config})  # noqa: S102
    cmd = config.Spawner.cmd
    assert cmd[0] == f"{sys.prefix}/bin/python" and Path(cmd[1]) == LAUNCHER
    assert Path(cmd[cmd.index("--source") + 1]) == ROOT


def test_the_image_leaves_the_solutions_out_and_pins_torch():
    docker = hub.config_files("z2jh")["Dockerfile"]
    assert "solutions" not in docker.replace("no solutions/", "")
    assert "torch==2.13.0" in docker and "-c /opt/mps-detective/course_utils/constraints.txt" in docker


def test_hub_config_prints_or_writes_and_never_replaces_a_file(tmp_path, capsys):
    assert main(["hub-config", "--flavour", "z2jh"]) == 0
    assert "# ===== config.yaml =====" in capsys.readouterr().out
    assert main(["hub-config", "--flavour", "tljh", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mps-detective.py", "tljh-setup.sh"]
    assert os.access(tmp_path / "tljh-setup.sh", os.X_OK)
    (tmp_path / "mps-detective.py").write_text("# mine")
    assert main(["hub-config", "--flavour", "tljh", "--out", str(tmp_path)]) == 2
    assert "left alone" in capsys.readouterr().err
    assert (tmp_path / "mps-detective.py").read_text() == "# mine"


def launch(tmp_path, *command, env=None):
    return subprocess.run([sys.executable, "-X", "importtime", str(LAUNCHER), "prepare", "--source",
                           str(ROOT), "--root", str(tmp_path / "me"), *command],
                          capture_output=True, text=True, timeout=60, env=env)


def test_the_launcher_prepares_the_learners_folder_and_never_overwrites_their_files(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "MPS_DETECTIVE_HOME"}
    show = "import os; print(os.environ['MPS_DETECTIVE_ROOT'], os.environ['MPS_DETECTIVE_HOME'], " \
           "os.environ['PATH'].split(os.pathsep)[0])"
    first = launch(tmp_path, "--", sys.executable, "-c", show, env=env)
    assert first.returncode == 0, first.stderr
    me = tmp_path / "me"
    assert first.stdout.split() == [str(me), str(me / "progress"), str(Path(sys.executable).parent)]
    assert "torch" not in first.stderr, "starting a server must not import torch"
    assert {p.name for p in (me / "notebooks").iterdir()} >= {"00_start_here.ipynb"}
    assert sorted(p.name for p in (me / "exercises").iterdir()) == sorted(
        p.name for p in (ROOT / "exercises").iterdir() if p.is_file())
    assert (me / "workspace").is_dir() and (me / "progress").is_dir()
    assert not (me / "solutions").exists()
    lesson = me / "notebooks" / "00_start_here.ipynb"
    lesson.write_text("my notes")
    (me / "exercises" / "01_mps_setup.ipynb").unlink()  # a learner's deletion: copied in again
    again = launch(tmp_path, env=env)
    assert again.returncode == 0 and "1 file(s) copied" in again.stderr
    assert lesson.read_text() == "my notes"


def test_the_launcher_says_why_it_cannot_prepare(tmp_path):
    failed = subprocess.run([sys.executable, str(LAUNCHER), "prepare", "--source", str(tmp_path),
                             "--root", str(tmp_path / "me")], capture_output=True, text=True)
    assert failed.returncode == 1 and "is --source the course checkout?" in failed.stderr


def notebook(path: Path, text: str = "{}") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def homes(tmp_path) -> Path:
    root = tmp_path / "home"
    notebook(root / "alice" / "mps-detective" / "workspace" / "01_mps_setup.ipynb", "alice's")
    notebook(root / "alice" / "mps-detective" / "workspace" / "02_unified_memory.ipynb")
    notebook(root / "alice" / "mps-detective" / "workspace" / "notes.ipynb")
    notebook(root / "alice" / "mps-detective" / "workspace" / "backups" / "01_mps_setup.x.ipynb")
    notebook(root / "bob" / "workspace" / "01_mps_setup.ipynb", "bob's")  # a checkout's workspace
    (root / "carol").mkdir()  # no workspace: not a learner
    (root / "dave" / "mps-detective" / "workspace").mkdir(parents=True)  # nothing yet
    os.mkfifo(root / "dave" / "mps-detective" / "workspace" / "03_sync_and_timing.ipynb")
    os.symlink(root / "alice" / "mps-detective" / "workspace" / "01_mps_setup.ipynb",
               root / "dave" / "mps-detective" / "workspace" / "01_mps_setup.ipynb")
    (root / "eve" / "mps-detective").mkdir(parents=True)
    os.symlink(root / "alice" / "mps-detective" / "workspace", root / "eve" / "mps-detective" / "workspace")
    return root


def test_collect_copies_each_learners_notebooks_reading_only_regular_files(homes, tmp_path):
    done = collect.collect([str(homes)], tmp_path / "class")
    assert done.learners == {"alice": ["01_mps_setup.ipynb", "02_unified_memory.ipynb"],
                             "bob": ["01_mps_setup.ipynb"], "dave": []}
    assert (tmp_path / "class" / "bob" / "01_mps_setup.ipynb").read_text() == "bob's"
    assert sorted(done.skipped) == ["dave/01_mps_setup.ipynb: a link",
                                    "dave/03_sync_and_timing.ipynb: not a regular file"]
    assert not (tmp_path / "class" / "eve").exists(), "a workspace that is a link is not followed"
    meta = json.loads((tmp_path / "class" / "collection.json").read_text())
    assert meta["from"]["alice"] == f"{homes}/alice"
    assert "collected 3 notebook(s) of 3 learner(s)" in collect.report(done)


def test_collect_never_overwrites_a_previous_collection(homes, tmp_path, capsys):
    assert main(["collect", str(homes), "--out", str(tmp_path / "class")]) == 0
    before = (tmp_path / "class" / "alice" / "01_mps_setup.ipynb").read_text()
    notebook(homes / "alice" / "mps-detective" / "workspace" / "01_mps_setup.ipynb", "changed")
    assert main(["collect", str(homes), "--out", str(tmp_path / "class")]) == 2
    assert "already exists" in capsys.readouterr().err
    assert (tmp_path / "class" / "alice" / "01_mps_setup.ipynb").read_text() == before
    (tmp_path / "empty").mkdir()
    assert main(["collect", str(homes / "alice"), "--out", str(tmp_path / "empty")]) == 0
    assert sorted(os.listdir(tmp_path / "empty" / "alice")) == ["01_mps_setup.ipynb",
                                                                "02_unified_memory.ipynb"]


def test_collect_strips_a_prefix_and_skips_a_second_learner_of_the_same_name(tmp_path):
    notebook(tmp_path / "a" / "jupyter-alice" / "mps-detective" / "workspace" / "01_x.ipynb")
    notebook(tmp_path / "b" / "alice" / "workspace" / "01_x.ipynb")
    done = collect.collect([str(tmp_path / "a"), str(tmp_path / "b")], tmp_path / "class",
                           strip_prefix="jupyter-")
    assert list(done.learners) == ["alice"]
    assert done.skipped == [f"{tmp_path / 'b'}/alice: learner 'alice' was already collected from "
                            f"{tmp_path / 'a'}/jupyter-alice"]


def graded_class(tmp_path) -> tuple[Path, Graded]:
    klass = tmp_path / "class"
    for name in ("alice/01_a.ipynb", "alice/02_b.ipynb", "bob/01_a.ipynb", "bob/01_again.ipynb",
                 "=cmd/01_a.ipynb"):
        notebook(klass / name)
    (klass / "dave").mkdir()  # collected, but no notebook
    passes = {"alice/01_a.ipynb": 2, "alice/02_b.ipynb": 1, "bob/01_a.ipynb": 1, "bob/01_again.ipynb": 2,
              "=cmd/01_a.ipynb": 0}
    ids = {"01": ["01.x", "01.y"], "02": ["02.z"]}
    rows = [Row(name, name.split("/")[1][:2], {i: Verdict("pass" if n < count else "fail")
                                               for n, i in enumerate(ids[name.split("/")[1][:2]])})
            for name, count in passes.items()]
    return klass, Graded(rows, [*ids["01"], *ids["02"]], seed=1, elapsed_s=0.0)


def test_the_lms_csv_has_one_row_per_learner_with_a_total_out_of_every_exercise(tmp_path):
    klass, graded = graded_class(tmp_path)
    rows = list(csv.reader(io.StringIO(LmsFile(tmp_path / "lms.csv", [klass]).text(graded))))
    assert rows == [["learner", "total", "possible", "percent"], ["'=cmd", "0", "3", "0.0"],
                    ["alice", "3", "3", "100.0"], ["bob", "2", "3", "66.7"], ["dave", "0", "3", "0.0"]]
    one = LmsFile(tmp_path / "lms.csv", [klass / "alice"]).learners()[0]
    assert set(one.values()) == {"alice"}, "a learner's own folder given: the folder is the learner"


def test_the_lms_csv_is_written_and_set_aside_with_the_gradebook(tmp_path):
    klass, graded = graded_class(tmp_path)
    lms = tmp_path / "grades" / "lms.csv"
    notebook(lms, "old run")
    files = GradebookFiles(tmp_path / "grades" / "book.csv", lms=LmsFile(lms, [klass]))
    assert tmp_path / "grades" / "lms.previous.csv" in files.set_aside()
    report = files.final(graded, Options())
    assert str(lms) in report and lms.read_text().startswith("learner,total,possible,percent\n")
