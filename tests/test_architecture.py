"""Does the package keep the shape docs/architecture.md's module map describes?

Read from the source with ``ast`` (nothing is imported), every module of ``course_utils`` belongs to
a part, and the parts are layered, left to right:

    core < toolkit (with toolkit/emulate, toolkit/memory, toolkit/watch, toolkit/syncs)
         < labs | drills < bank < jupyter < learner < author | instructor < grader
         < the top-level modules (__init__.py, cli.py, bootstrap.py)

A module may import its own part and the parts to its left, never one to its right; ``labs`` and
``drills`` stand side by side and import neither each other. Every import counts: at module level,
inside a function, under ``if TYPE_CHECKING:``, and ``importlib.import_module("course_utils....")``
with a literal (or f-string) prefix. Importing the package itself (``import course_utils``,
``from course_utils import check``) is an import of the top-level ``__init__.py``.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "course_utils"
TOP = "top-level"  # __init__.py, cli.py, bootstrap.py: the part of the package's own modules
LAYERS = (("core",), ("toolkit",), ("labs", "drills"), ("bank",), ("jupyter",), ("learner",),
          ("author", "instructor"), ("grader",), (TOP,))
RANK = {part: rank for rank, parts in enumerate(LAYERS) for part in parts}
ORDER = " < ".join(" | ".join(parts) for parts in LAYERS)
MAX_LINES = 350
TOOLKIT_MAY_IMPORT = ("core", "toolkit")


@dataclass(frozen=True)
class Import:
    file: str  # relative to the repository root
    line: int
    source_part: str
    target: str  # a dotted module name inside course_utils
    target_part: str

    def __str__(self) -> str:
        shown = "course_utils/__init__.py" if self.target == "course_utils" else self.target
        return f"{self.file}:{self.line}: {self.source_part} -> {shown} [{self.target_part}]"


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def part_of(dotted: str) -> str:
    """The part of a module inside course_utils: its first folder, or TOP for the package's own files."""
    pieces = dotted.split(".")
    if len(pieces) == 1 or (PACKAGE / pieces[1]).with_suffix(".py").is_file():
        return TOP
    return pieces[1]


def is_module(dotted: str) -> bool:
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _literal_prefix(node: ast.expr) -> str | None:
    """The dotted module name a call's first argument starts with, when it is written out."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        text = str(node.values[0].value)
        return text.rsplit(".", 1)[0] if "." in text else None  # "course_utils.drills.{x}" -> drills
    return None


def _targets(node: ast.AST, package: str) -> list[str]:
    """The course_utils modules one node imports."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        # `from course_utils import bank` imports the subpackage; `from course_utils import check`
        # imports a name of course_utils/__init__.py.
        return [f"{module}.{a.name}" if is_module(f"{module}.{a.name}") else module for a in node.names]
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in ("import_module", "__import__"):
            prefix = _literal_prefix(node.args[0])
            return [prefix] if prefix else []
    return []


@cache
def all_imports() -> tuple[Import, ...]:
    found = []
    for path in modules():
        name = module_name(path)
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            for target in _targets(node, package):
                if target == "course_utils" or target.startswith("course_utils."):
                    found.append(Import(str(path.relative_to(ROOT)), node.lineno, part_of(name), target,
                                        part_of(target)))
    return tuple(found)


def _report(title: str, rows: list) -> str:
    return "\n".join([title, *(f"  {row}" for row in rows)])


def fail_listing(title: str, rows: list) -> None:
    """Fail with the title and one line per offence, without pytest's repr of the list."""
    if rows:
        pytest.fail(_report(title, rows), pytrace=False)


def test_every_module_belongs_to_a_known_part():
    unknown = sorted({(part_of(module_name(p)), str(p.relative_to(ROOT))) for p in modules()
                      if part_of(module_name(p)) not in RANK})
    fail_listing(
        f"Modules in a part the layer order does not know (add the part to LAYERS in "
        f"{Path(__file__).name} and to the module map in docs/architecture.md; order: {ORDER}):",
        [f"{file} (part {part!r})" for part, file in unknown])


def test_imports_never_go_to_a_part_on_the_right():
    wrong = [imp for imp in all_imports()
             if imp.target_part in RANK and imp.source_part in RANK
             and (RANK[imp.target_part] > RANK[imp.source_part]
                  or (RANK[imp.target_part] == RANK[imp.source_part]
                      and imp.target_part != imp.source_part))]
    fail_listing(
        f"Imports against the layer order {ORDER}\n(a module may import its own part and the parts "
        "to its left; labs and drills import neither each other). Move the code to the right part, "
        "or pass what it needs in from the caller:", wrong)


def test_the_toolkit_never_imports_the_course_machinery():
    wrong = [imp for imp in all_imports()
             if imp.source_part == "toolkit" and imp.target_part not in TOOLKIT_MAY_IMPORT]
    fail_listing(
        "The toolkit is what a learner takes home: it may import course_utils.core and itself, never "
        "the labs, drills, bank, course machinery, grader or the package's top-level modules:", wrong)


def _bank_lesson_folder(path: Path) -> str | None:
    """``lessonNN`` for a module directly inside a lesson package of the bank, else None."""
    rel = path.relative_to(PACKAGE).parts
    return rel[1] if len(rel) == 3 and rel[0] == "bank" and rel[1].startswith("lesson") else None


def test_no_two_modules_share_a_file_name():
    by_name: dict[str, list[Path]] = defaultdict(list)
    for path in modules():
        if path.name != "__init__.py":
            by_name[path.name].append(path)
    repeated = {}
    for name, paths in sorted(by_name.items()):
        if len(paths) < 2:
            continue
        # The bank's registry names a lesson's modules for it: `lessonNN/mastery_quiz.py` in every lesson,
        # `lessonNN/<exercise>.py` after the id's second half. Such a module is known by lesson and
        # name (its exercise id), so a name repeated only across different lesson packages is fine.
        lessons = [_bank_lesson_folder(p) for p in paths]
        if None not in lessons and len(set(lessons)) == len(lessons):
            continue
        repeated[name] = paths
    fail_listing(
        "Module file names used more than once (one name, one module: rename one; __init__.py and "
        "the bank's per-lesson modules, across lessons, excepted):",
        [f"{name}: {', '.join(str(p.relative_to(ROOT)) for p in paths)}" for name, paths in repeated.items()])


def test_no_file_is_over_350_lines():
    long = sorted(((len(p.read_text(encoding="utf-8").splitlines()), p) for p in modules()), reverse=True)
    over = [f"{p.relative_to(ROOT)}: {n} lines" for n, p in long if n > MAX_LINES]
    fail_listing(f"Files over {MAX_LINES} lines (split each into cohesive modules; keep "
                 "its public names importable from where they were):", over)


def test_the_startup_facts_are_read_before_anything_imports_torch():
    init = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    first = next(node for node in init.body if isinstance(node, (ast.Import, ast.ImportFrom))
                 and not (isinstance(node, ast.ImportFrom) and node.module == "__future__"))
    assert isinstance(first, ast.ImportFrom) and first.module == "course_utils.core" and [
        a.name for a in first.names] == ["startup"], (
        f"course_utils/__init__.py:{first.lineno}: its first import must be "
        "`from course_utils.core import startup` (it reads PYTORCH_ENABLE_MPS_FALLBACK before torch loads)")
    for path in (PACKAGE / "core" / "startup.py", PACKAGE / "core" / "__init__.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bad = [f"{path.relative_to(ROOT)}:{node.lineno}: imports {name}" for node in ast.walk(tree)
               for name in _targets(node, "course_utils.core")
               if name.split(".")[0] in ("torch", "numpy", "course_utils")]
        fail_listing("What runs before torch is imported (core/__init__.py, core/startup.py) "
                     "imports the standard library only:", bad)


def test_the_checker_sees_imports_inside_functions_and_relative_ones():
    """The resolver itself: a function-level import, a relative import and import_module count."""
    source = ("def f():\n    from course_utils import bank\n"
              "from . import checking\n"
              "import importlib\nimportlib.import_module(f'course_utils.drills.{x}')\n"
              "from course_utils import check\n")
    tree = ast.parse(source)
    targets = [t for node in ast.walk(tree) for t in _targets(node, "course_utils.learner")]
    assert sorted(targets) == sorted(["course_utils.bank", "course_utils.learner.checking", "importlib",
                                      "course_utils.drills", "course_utils"])
    assert [part_of(t) for t in ("course_utils", "course_utils.cli", "course_utils.toolkit.emulate.inplace",
                                 "course_utils.drills")] == [TOP, TOP, "toolkit", "drills"]


def _file_graph() -> dict[str, set[str]]:
    """Module -> the modules of the package it imports (a package's import is its __init__)."""
    names = {module_name(p) for p in modules()}
    graph: dict[str, set[str]] = defaultdict(set)
    for imp in all_imports():
        source = module_name(ROOT / imp.file)
        target = imp.target if imp.target in names else imp.target.rsplit(".", 1)[0]
        if target in names and target != source:
            graph[source].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of two or more modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_modules_import_each_other_in_a_circle():
    """A package's own __init__ re-exporting its modules is not a circle; files that need each
    other are (move what both need into a third module, or pass it in)."""
    graph = {src: {t for t in targets if not src.startswith(t + ".")}
             for src, targets in _file_graph().items()}
    fail_listing("Modules that import each other (directly or round a circle):",
                 [" <-> ".join(group) for group in _cycles(graph)])


def test_the_circle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
