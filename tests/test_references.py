"""Sources a learner can open: notebooks/references.md and every citation of it.

Learner-facing text is every notebook's cells and stored outputs (lessons, solutions, exercises),
every string, comment and docstring in course_utils (quiz and drill explanations, CLI output), the
README and the docs/ pages. None of it may point at documents a learner does not have ("facts §3", "seed 003",
"toolchain notes", "our index", "... in solutions/exercises"). Each citation, a link
``[R7](references.md#r7)`` in Markdown or "R7 in references.md" in Python strings, must name an
entry that exists; each entry must carry a public http(s) link; and every entry is cited somewhere.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REFERENCES = ROOT / "notebooks" / "references.md"
NOTEBOOK_DIRS = ("notebooks", "solutions", "exercises")

INTERNAL = {
    "the facts sheet": re.compile(r"facts\s*§"),
    "a seed document": re.compile(r"\bseeds?\s+00\d", re.IGNORECASE),
    "the toolchain notes": re.compile(r"toolchain notes", re.IGNORECASE),
    "our index": re.compile(r"\bour index\b", re.IGNORECASE),
    "a pointer into solutions/": re.compile(r"(in solutions/exercises|Practice:[^\n]*solutions/)"),
}
ANCHOR = re.compile(r'<a id="r(\d+)"></a>')
LINK = re.compile(r"\[R(\d+)\]\(([^)#\s]*)#r(\d+)\)")
BARE = re.compile(r"\bR(\d+)(?:\s*[-–]\s*R(\d+))?\b")


def _notebooks() -> list[Path]:
    return sorted(p for d in NOTEBOOK_DIRS for p in (ROOT / d).glob("*.ipynb"))


def _cell_texts(path: Path) -> list[tuple[str, str]]:
    """(where, text) for every cell source and every stored text output of a notebook."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    texts = []
    for i, cell in enumerate(nb["cells"]):
        where = f"{path.relative_to(ROOT)} cell {i} ({cell.get('id')})"
        texts.append((where, "".join(cell["source"])))
        for out in cell.get("outputs", []):
            if "text" in out:
                texts.append((where + " output", "".join(out["text"])))
            for mime, value in out.get("data", {}).items():
                if mime.startswith("text/"):
                    texts.append((where + f" output {mime}", "".join(value)))
    return texts


def _python_texts() -> list[tuple[str, str]]:
    return [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8"))
            for p in sorted((ROOT / "course_utils").rglob("*.py"))]


def _all_texts() -> list[tuple[str, str]]:
    texts = [t for nb in _notebooks() for t in _cell_texts(nb)] + _python_texts()
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return texts + [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in pages]


def _entries() -> dict[int, str]:
    """Entry number -> its text (from its anchor to the next one or a heading)."""
    text = REFERENCES.read_text(encoding="utf-8")
    marks = list(ANCHOR.finditer(text))
    entries = {}
    for mark, nxt in zip(marks, marks[1:] + [None], strict=True):
        body = text[mark.end():nxt.start() if nxt else len(text)]
        entries[int(mark.group(1))] = body.split("\n## ")[0]
    return entries


def _cited(text: str) -> list[int]:
    """The entry numbers a text cites: Markdown links, and R-numbers near 'references.md'."""
    numbers = [int(m.group(1)) for m in LINK.finditer(text)]
    for line in text.splitlines():
        if "references.md" not in line and not re.search(r"\bR\d+\b.*\bin\s*$", line):
            continue
        for m in BARE.finditer(LINK.sub("", line)):
            first, last = int(m.group(1)), int(m.group(2) or m.group(1))
            numbers += range(first, last + 1)
    return numbers


def test_is_there_a_references_page_with_numbered_entries_in_order():
    entries = _entries()
    assert len(entries) >= 40, "references.md should list the public sources the lessons use"
    assert sorted(entries) == list(range(1, len(entries) + 1)), "entries are R1, R2, ... in order"
    for n, body in entries.items():
        assert body.lstrip().startswith(f"**R{n}.**"), f"anchor r{n} is not followed by **R{n}.**"


@pytest.mark.parametrize("n", sorted(_entries()))
def test_does_every_entry_carry_a_public_link_and_words_of_its_own(n):
    body = _entries()[n]
    assert re.search(r"<https?://[^>\s]+>", body), f"R{n} has no http(s) link"
    words = re.sub(r"<https?://[^>]+>", "", body)
    assert len(words.split()) >= 12, f"R{n} needs a sentence or two saying what we take from it"


def test_is_no_internal_document_cited_in_learner_facing_text():
    found = [f"{where}: {name}: ...{text[max(0, m.start() - 40):m.end() + 40]!r}..."
             for where, text in _all_texts()
             for name, pattern in INTERNAL.items()
             for m in pattern.finditer(text)]
    assert not found, "cite notebooks/references.md instead:\n" + "\n".join(found[:40])


def test_does_every_citation_name_an_entry_that_exists():
    entries = _entries()
    missing = [f"{where}: R{n}" for where, text in _all_texts() for n in _cited(text)
               if n not in entries]
    assert not missing, "no such entry in references.md:\n" + "\n".join(missing)


def test_does_every_citation_link_point_at_the_references_page_and_its_anchor():
    bad = []
    for nb in _notebooks():
        for where, text in _cell_texts(nb):
            for m in LINK.finditer(text):
                target = (nb.parent / m.group(2)).resolve()
                if target != REFERENCES.resolve() or m.group(1) != m.group(3):
                    bad.append(f"{where}: {m.group(0)}")
    assert not bad, "a citation link must read [R7](<path to notebooks/references.md>#r7):\n" + \
        "\n".join(bad)


def test_is_every_entry_cited_somewhere():
    cited = {n for _, text in _all_texts() for n in _cited(text)}
    unused = sorted(set(_entries()) - cited)
    assert not unused, f"entries no text cites (cite them or drop them): {unused}"


def test_does_the_checker_see_the_citations_it_must_see():
    """The scans above are not vacuous: they find known citations and known internal names."""
    assert _cited("see [R7](references.md#r7) and R12, R14-R16 in references.md") == \
        [7, 12, 14, 15, 16]
    assert INTERNAL["the facts sheet"].search("(facts §4)")
    assert INTERNAL["a seed document"].search("Seed 003's running example")
    assert INTERNAL["a pointer into solutions/"].search("Practice: exercise 07.x in solutions/exercises 07.")
    assert not INTERNAL["a seed document"].search("torch.manual_seed(0); seed=2026")
    lesson_links = [n for where, text in _all_texts() if where.startswith("notebooks")
                    for n in _cited(text)]
    assert len(lesson_links) >= 100
