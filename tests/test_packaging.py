"""Do pyproject, environment.yml, the constraints, the README and CI tell the same story?"""

import re

import tomllib
import yaml
from packaging.requirements import Requirement
from packaging.version import Version
from rattler import MatchSpec

from course_utils.course.lessons import LESSONS, stem
from tests.conftest import ROOT

CONDA_NAMES = {"torch": "pytorch", "matplotlib": "matplotlib-base"}


def pyproject_requirements() -> list[Requirement]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = meta["dependencies"] + meta["optional-dependencies"]["dev"]
    return [Requirement(line) for line in lines]


def conda_specs() -> dict[str, MatchSpec]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    specs = [MatchSpec(d) for d in env["dependencies"] if isinstance(d, str)]
    return {s.name.normalized: s for s in specs}


def test_environment_yml_lists_every_pyproject_package_with_the_same_range():
    conda = conda_specs()
    for req in pyproject_requirements():
        name = CONDA_NAMES.get(req.name, req.name)
        assert name in conda, f"{name} missing from environment.yml"
        assert str(conda[name].version).replace(" ", "") == ",".join(
            sorted(str(s) for s in req.specifier)[::-1]) or set(
            str(conda[name].version).split(",")) == {str(s) for s in req.specifier}, name


def test_environment_yml_has_python_pip_and_installs_the_course():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["channels"] == ["conda-forge"]
    assert "python" in conda_specs() and "pip" in conda_specs()
    pip_lists = [d["pip"] for d in env["dependencies"] if isinstance(d, dict)]
    assert pip_lists == [["-e ."]]


def test_constraints_pin_torch_2_13_inside_the_declared_range():
    pins = {}
    for line in (ROOT / "course_utils" / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            req = Requirement(line)
            (spec,) = req.specifier
            assert spec.operator == "==", f"constraints must pin exactly: {line}"
            pins[req.name.lower().replace("_", "-")] = Version(spec.version)
    assert pins["torch"] == Version("2.13.0")
    for req in pyproject_requirements():
        name = req.name.lower()
        if name in pins:
            assert req.specifier.contains(pins[name]), f"{name} pin outside {req.specifier}"


def readme() -> str:
    return (ROOT / "README.md").read_text()


def test_the_readme_quick_start_is_exactly_two_commands_and_ci_runs_the_test_one():
    section = readme().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["python3 course_utils/bootstrap.py lab",
                        "python3 course_utils/bootstrap.py test"]
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.startswith(("#", "set ", "cd "))]
    assert ci == [commands[1]]


def test_the_readme_lesson_table_matches_the_lesson_list():
    rows = re.findall(r"^\| (\d\d) \| ([^|]+) \|", readme(), re.M)
    assert [(n, t.strip()) for n, t in rows] == [(x.number, x.title) for x in LESSONS]


def test_every_lesson_notebook_is_a_known_lesson_with_the_same_stem_everywhere():
    known = {stem(x) for x in LESSONS}
    for folder in ("notebooks", "solutions", "exercises"):
        for path in (ROOT / folder).glob("*.ipynb"):
            assert path.stem in known, f"{folder}/{path.name} is not in course_utils.course.lessons"
