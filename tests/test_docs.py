"""The documents a reader meets: a short README that links to docs/, links that resolve, benchmark
tables that are the benchmarks' own output, and text that says what the course does, never how it
was made."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.benchmarks import doc_tables  # noqa: E402

README_LIMIT = 150
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# Wording about how the project was built: work periods, rounds of authors, tracker numbers.
# (Spelled in pieces so this file does not match itself.)
HISTORY = [re.compile(p, re.I) for p in (
    r"\b(this|that|earlier|previous|last|next|a later|one) sess" + r"ions?\b",
    r"\bsess" + r"ion's time",
    r"\bdid not fit the sess" + r"ion",
    r"(?<![#/\w])iss" + r"ue \d+\b",
    r"\brounds? of (script )?auth" + r"ors\b",
    r"\bin (two|three|four|five|\d+) rou" + r"nds by\b",
    r"\bhel" + r"per (agent|session)s?\b",
    r"\bcoordin" + r"ator\b",
)]
ANY_HISTORY = re.compile("|".join(f"(?:{p.pattern})" for p in HISTORY), re.I)
TEXT_SUFFIXES = {".md", ".py", ".ipynb", ".toml", ".yml", ".yaml", ".cfg", ".txt", ".sh", ".json"}


def tracked_text_files() -> list[Path]:
    """Every tracked text file of the repository (what a reader of it sees)."""
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    paths = [ROOT / name for name in out.stdout.decode().split("\0") if name]
    return [p for p in paths if p.suffix in TEXT_SUFFIXES or p.name == "run"]


def test_the_readme_is_short_and_links_to_every_docs_page():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= README_LIMIT, "README.md: move detail into a docs/ page"
    missing = [p.name for p in PAGES[1:] if f"docs/{p.name}" not in text]
    assert not missing, f"README.md does not link to {missing}"


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors for a Markdown page's headings."""
    heads = re.findall(r"^#+ (.+)$", page.read_text(), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_of_a_page_resolves(page):
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(target)
    assert not broken, f"{page.name}: links that lead nowhere: {broken}"


def _renderers():
    """Each published table's renderer, from the benchmark that writes it."""
    from course_utils import matrix
    from tests.benchmarks import bench, bench_grade, bench_hub, bench_watch_cost, watch_batches
    return {
        "torch_matrix": ("performance.md", matrix.render),
        "grade_memory": ("performance.md", bench_grade.render_memory),
        "performance": ("performance.md", lambda rows: bench.render([tuple(r) for r in rows], True)),
        "hub_capacity": ("instructors.md", bench_hub.render),
        "watch_cost": ("watch.md", bench_watch_cost.render),
        "watch_batches": ("watch.md", watch_batches.render),
    }


def test_every_benchmark_table_in_the_docs_is_its_benchmarks_output():
    markers = {name for page in PAGES for name in re.findall(r"<!-- table (\w+): written by",
                                                             page.read_text())}
    renderers = _renderers()
    assert markers == set(renderers), "a docs table without its renderer here (or the reverse)"
    for name, (page, render) in renderers.items():
        record = doc_tables.stored_rows(name)
        assert record["rows"] and record["measured"] and record["machine"]
        assert doc_tables.table_in(ROOT / "docs" / page, name) == render(record["rows"]).strip(), (
            f"docs/{page}: table {name} differs from its figures; rerun its benchmark with --publish")


def test_publish_replaces_only_the_table_between_the_markers(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text("before\n<!-- table t: written by `x --publish`; do not edit -->\n| old |\n"
                    "<!-- end table t -->\nafter\n")
    monkeypatch.setattr(doc_tables, "DOCS", tmp_path)
    monkeypatch.setattr(doc_tables, "FIGURES", tmp_path / "figures")
    doc_tables.publish("t", "page.md", [[1]], "| new |")
    assert page.read_text().splitlines() == [
        "before", "<!-- table t: written by `x --publish`; do not edit -->", "| new |",
        "<!-- end table t -->", "after"]
    assert doc_tables.stored_rows("t")["rows"] == [[1]]


def test_no_file_speaks_of_how_the_project_was_made():
    hits = []
    for path in tracked_text_files():
        text = path.read_text(errors="replace")
        if path == Path(__file__) or not ANY_HISTORY.search(text):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if "github.com" in line or "pytorch#" in line:
                continue
            if ANY_HISTORY.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert not hits, "say what the code does, not how it was built:\n" + "\n".join(hits)


@pytest.mark.parametrize("line, flagged", [
    ("The JupyterHub test (iss" + "ue 22) starts a hub", True),
    ("written in earlier sess" + "ions by authors", True),
    ("in four rounds by authors who had not read it", True),
    ("was cut short by the sess" + "ion's time", True),
    ("see pytorch/pytorch#157131 for the fix", False),
    ("a timed round of four drills", False),
    ("the learner's drill session", False),
])
def test_the_history_patterns_flag_history_and_nothing_else(line, flagged):
    assert any(p.search(line) for p in HISTORY) == flagged


def _module_map() -> list[tuple[str, list[str]]]:
    """(part folder, entry points) per row of docs/architecture.md's module map."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    table = text.split("| part | job | entry points |", 1)[1].split("\n\n", 1)[0]
    rows = []
    for line in table.strip().splitlines()[1:]:
        part, _, entries = [cell.strip() for cell in line.strip("|").split("|")]
        folder = "" if part == "top level" else part.strip("`").rstrip("/")
        rows.append((folder, re.findall(r"`([A-Za-z_][\w.]*)`", entries)))
    return rows


def test_the_module_map_names_every_part_and_each_entry_point_exists():
    import importlib.util

    rows = _module_map()
    package = ROOT / "course_utils"
    parts = {p.name for p in package.iterdir() if (p / "__init__.py").exists()}
    assert parts <= {folder for folder, _ in rows}, "a part of the package missing from the map"
    for folder, entries in rows:
        assert (package / folder).is_dir(), f"the map names course_utils/{folder}, which is gone"
        base = "course_utils" + (f".{folder.replace('/', '.')}" if folder else "")
        for entry in entries:
            if entry.endswith(".py"):
                assert (package / folder / entry).exists(), entry
                continue
            head, _, attr = entry.partition(".")
            module_name = base if head == Path(folder).name else f"{base}.{head}"  # drills.get
            if importlib.util.find_spec(module_name) is None:  # a name the part exports: check
                module_name, attr = base, head
            module = importlib.import_module(module_name)
            assert not attr or hasattr(module, attr), f"{module_name} has no {attr} (docs/architecture.md)"
