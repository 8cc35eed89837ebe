"""Do pyproject, environment.yml, the constraints, the README and CI tell the same story, and are
the declared dependencies the ones the course imports?"""

import ast
import re
import sys
from importlib.metadata import packages_distributions

import pytest
import tomllib
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from course_utils.learner.lessons import LESSONS, stem
from tests.conftest import ROOT

CONDA_NAMES = {"torch": "pytorch", "matplotlib": "matplotlib-base"}  # pip name -> conda-forge name
CONDA_ONLY = {"python", "pip"}
# Runtime dependencies no `import` names: what they are for.
NOT_IMPORTED = {
    "jupyterlab": "`course lab` runs `python -m jupyter lab`; the doctor checks its version",
    "ipykernel": "the kernel every lesson runs in (`course check`, `course run-notebooks`)",
    "numpy": "torch's Tensor.numpy() (plots, the grader's wire) needs it; torch does not declare it",
}
CONDA_SPEC = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9_.\-]*)\s*(?P<range>[<>=!~][^\s]*)?")


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def runtime_requirements() -> list[Requirement]:
    return [Requirement(line) for line in pyproject()["dependencies"]]


def dev_requirements() -> list[Requirement]:
    return [Requirement(line) for line in pyproject()["optional-dependencies"]["dev"]]


def conda_spec(text: str) -> tuple[str, SpecifierSet]:
    """``name`` and its version range from a conda spec of the form ``name>=a,<b`` (the only form
    environment.yml uses: a version range that reads the same in conda and in pip)."""
    match = CONDA_SPEC.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"environment.yml: {text!r} is not of the form name>=a,<b")
    return canonicalize_name(match["name"]), SpecifierSet(match["range"] or "")


def conda_specs(env: dict | None = None) -> dict[str, SpecifierSet]:
    env = env or yaml.safe_load((ROOT / "environment.yml").read_text())
    return dict(conda_spec(d) for d in env["dependencies"] if isinstance(d, str))


def disagreements(requirements: list[Requirement], conda: dict[str, SpecifierSet]) -> list[str]:
    """How environment.yml's packages differ from ``requirements`` (none when they mirror)."""
    wanted = {canonicalize_name(CONDA_NAMES.get(r.name, r.name)): r for r in requirements}
    found = [f"{name}: missing from environment.yml" for name in wanted if name not in conda]
    found += [f"{name}: {conda[name] or 'any version'} in environment.yml, {r.specifier or 'any'} "
              "in pyproject" for name, r in wanted.items() if name in conda and conda[name] != r.specifier]
    found += [f"{name}: in environment.yml only" for name in conda
              if name not in wanted and name not in CONDA_ONLY]
    return found


def test_environment_yml_lists_exactly_the_runtime_packages_with_the_same_ranges():
    assert disagreements(runtime_requirements(), conda_specs()) == []


@pytest.mark.parametrize("change, words", [
    (lambda deps: deps.remove("tqdm>=4.66"), "tqdm: missing"),
    (lambda deps: deps.append("pytest>=8"), "pytest: in environment.yml only"),
    (lambda deps: deps.__setitem__(deps.index("pytorch>=2.13,<2.15"), "pytorch>=2.13"), "pytorch: >=2.13 in"),
    (lambda deps: deps.__setitem__(deps.index("nbformat>=5.9"), "nbformat"), "nbformat: any version"),
])
def test_a_disagreeing_environment_yml_is_caught(change, words):
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    change(env["dependencies"])
    assert any(line.startswith(words) for line in disagreements(runtime_requirements(), conda_specs(env)))


def test_a_conda_spec_this_test_cannot_read_is_an_error_not_a_pass():
    assert conda_spec("jupyter_client>=8") == ("jupyter-client", SpecifierSet(">=8"))
    with pytest.raises(ValueError, match="not of the form"):
        conda_spec("pytorch 2.13.* cpu_*")


def test_environment_yml_has_python_pip_and_installs_the_course_without_the_test_tools():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["channels"] == ["conda-forge"]
    assert "python" in conda_specs() and "pip" in conda_specs()
    pip_lists = [d["pip"] for d in env["dependencies"] if isinstance(d, dict)]
    assert pip_lists == [["-e ."]]
    assert not {canonicalize_name(r.name) for r in dev_requirements()} & set(conda_specs())


def _imports(tree: ast.AST):
    """Top-level names of every import in ``tree``, except those guarded by ``except ImportError``
    (optional: the code runs without them)."""
    optional: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
                isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")
                for h in node.handlers):
            optional |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0]


def third_party_imports() -> dict[str, set[str]]:
    """Distribution -> the course_utils files that import it (the standard library and the course
    itself left out)."""
    dists = packages_distributions()
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "course_utils").rglob("*.py")):
        for name in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if name in sys.stdlib_module_names or name in ("course_utils", "__future__"):
                continue
            if (path.parent / f"{name}.py").exists():  # a file run by path importing its sibling
                continue
            for dist in dists.get(name, [f"(no installed distribution for `import {name}`)"]):
                found.setdefault(canonicalize_name(dist), set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_package_the_course_imports_is_a_runtime_dependency():
    runtime = {canonicalize_name(r.name) for r in runtime_requirements()}
    missing = {dist: sorted(files) for dist, files in third_party_imports().items() if dist not in runtime}
    assert missing == {}, "imported by course_utils but not in pyproject's dependencies"


def test_every_runtime_dependency_is_imported_or_has_a_stated_reason():
    imported = set(third_party_imports())
    unused = [r.name for r in runtime_requirements()
              if canonicalize_name(r.name) not in imported and r.name not in NOT_IMPORTED]
    assert unused == [], "declared but never imported: move it to the dev extra, drop it, or say why"


def test_constraints_pin_torch_2_13_inside_the_declared_range():
    pins = {}
    for line in (ROOT / "course_utils" / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            req = Requirement(line)
            (spec,) = req.specifier
            assert spec.operator == "==", f"constraints must pin exactly: {line}"
            pins[req.name.lower().replace("_", "-")] = Version(spec.version)
    assert pins["torch"] == Version("2.13.0")
    for req in runtime_requirements() + dev_requirements():
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
            assert path.stem in known, f"{folder}/{path.name} is not in course_utils.learner.lessons"
