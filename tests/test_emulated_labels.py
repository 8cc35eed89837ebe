"""Emulated means labelled: every stored output produced under an emulation says so.

A code cell enters an emulation when its source calls one: the asynchronous device
(``AsyncDevice``, ``open_device``, which is emulated on a CPU), the CPU fallback
(``emulate_fallback`` and lesson 04's ``emulated(...)`` helper), the in-place bug
(``mps_inplace_bug``, ``mps_random_bug``, a ``Machine`` such as ``AFFECTED``) or the capstone's
lab (``Lab``, ``haunted``). The stored outputs are from a CPU run, so each such cell that prints
anything must say "emulated". A few cells only read the results of an emulated run made in an
earlier cell; they are listed by hand in ``READS_AN_EMULATED_RUN``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENTERS = re.compile(
    r"\b(AsyncDevice|open_device|emulate_fallback|emulated|mps_inplace_bug|mps_random_bug|Machine|"
    r"Lab|haunted)\s*\(|\bmachine\s*=\s*AFFECTED\b")
READS_AN_EMULATED_RUN = {
    "notebooks/06_addcmul_detective.ipynb": {"c13", "c19"},
    "notebooks/08_interview_drills.ipynb": {"c35"},
}
# the cells found unlabelled before: the test must see each of them
MUST_SEE = {
    "notebooks/04_cpu_fallback.ipynb": {"c32", "c35"},
    "notebooks/06_addcmul_detective.ipynb": {"c13", "c17", "c19", "c31"},
    "notebooks/08_interview_drills.ipynb": {"c47"},
}


def _output_text(cell: dict) -> str:
    parts = []
    for out in cell.get("outputs", []):
        parts.append("".join(out.get("text", "")))
        parts += ["".join(v) for k, v in out.get("data", {}).items() if k.startswith("text/")]
        if out.get("output_type") == "error":
            parts.append(f"{out.get('ename')}: {out.get('evalue')}")
    return "\n".join(parts)


def _emulated_cells() -> list[tuple[str, str, dict]]:
    found = []
    for folder in ("notebooks", "solutions"):
        for path in sorted((ROOT / folder).glob("*.ipynb")):
            name = f"{folder}/{path.name}"
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            for cell in cells:
                if cell["cell_type"] != "code" or not cell.get("outputs"):
                    continue
                source = "".join(cell["source"])
                if ENTERS.search(source) or cell.get("id") in READS_AN_EMULATED_RUN.get(name, ()):
                    found.append((name, cell.get("id"), cell))
    return found


CELLS = _emulated_cells()


@pytest.mark.parametrize("notebook, cell_id, cell", CELLS, ids=[f"{n}:{c}" for n, c, _ in CELLS])
def test_does_every_output_made_under_an_emulation_say_emulated(notebook, cell_id, cell):
    text = _output_text(cell)
    assert "emulated" in text.lower(), (
        f"{notebook} cell {cell_id} runs under an emulation but its output never says "
        f"'emulated':\n{text[:400]}")


def test_does_the_scan_find_the_emulated_cells_it_must():
    seen: dict[str, set] = {}
    for notebook, cell_id, _ in CELLS:
        seen.setdefault(notebook, set()).add(cell_id)
    for notebook, ids in MUST_SEE.items():
        assert ids <= seen.get(notebook, set()), f"{notebook}: not scanned: {ids - seen[notebook]}"
    assert len(CELLS) >= 40


def test_does_the_pattern_tell_entering_an_emulation_from_mentioning_one():
    assert ENTERS.search("with mps_inplace_bug():")
    assert ENTERS.search("with open_device(device) as dev:")
    assert ENTERS.search("find_frozen(Trainer(model, machine=AFFECTED))")
    assert not ENTERS.search("from course_utils.toolkit.emulate.inplace import mps_inplace_bug")
    assert not ENTERS.search("print(known_bug_status())")
