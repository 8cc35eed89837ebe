"""Emulated means labelled: every stored output produced under an emulation says so.

A code cell enters an emulation when its source calls one: the asynchronous device
(``AsyncDevice``, ``open_device``, which is emulated on a CPU), the CPU fallback
(``emulate_fallback`` and lesson 04's ``emulated(...)`` helper), the in-place bug
(``mps_inplace_bug``, ``mps_random_bug``, a ``Machine`` such as ``AFFECTED``) or the capstone's
lab (``Lab``, ``haunted``); when it raises an error it made up to stand for a Mac's (an emulated
out-of-memory error); or when it calls a function or class that an earlier cell of the notebook
defined in a cell that enters one (a helper such as ``fallback_warnings`` or ``accumulate``). The
stored outputs are from a CPU run, so each such cell that prints anything must say "emulated".
A few cells only read the results of an emulated run made in an earlier cell; they are listed by
hand in ``READS_AN_EMULATED_RUN``.

Inside such a cell, a finding the toolkit reports (a sentinel line, a ``course watch`` finding)
must say "emulated" itself, not only somewhere else in the cell's output: a reader sees the
finding, not the cell.

The scan by source finds the cells that call an emulation it knows by name. The scan by output
finds the class however it was produced: the stored outputs come from a CPU run with no Apple GPU
and no memory pressure, so an output that *shows* an MPS-only phenomenon (a tensor on the ``mps``
device, an out-of-memory error, a fallback warning or error, an update that never lands) can only
have been made under an emulation, by whatever code, and must say "emulated".
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
# An error the cell makes up to stand for a Mac's: raise SomeError("... (emulated ...").
RAISES_AN_EMULATED_ERROR = re.compile(r"\braise\s+[\w.]+\(\s*f?[\"'][^\"'\n]*emulated", re.IGNORECASE)
DEFINES = re.compile(r"^(?:def|class)\s+(\w+)", re.MULTILINE)
READS_AN_EMULATED_RUN = {
    "notebooks/06_addcmul_detective.ipynb": {"c13", "c19"},
    "notebooks/08_interview_drills.ipynb": {"c35"},
}
# the cells found unlabelled before: the test must see each of them
MUST_SEE = {
    "notebooks/02_unified_memory.ipynb": {"c29", "c31"},
    "notebooks/04_cpu_fallback.ipynb": {"c13", "c15", "c32", "c35"},
    "notebooks/06_addcmul_detective.ipynb": {"c13", "c17", "c19", "c31"},
    "notebooks/08_interview_drills.ipynb": {"c47"},
}


def _output_text(cell: dict) -> str:
    """The cell's text outputs; stream chunks joined as a reader sees them (a line may span two)."""
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream" and parts and parts[-1][0] == out.get("name"):
            parts[-1] = (out.get("name"), parts[-1][1] + "".join(out.get("text", "")))
            continue
        texts = ["".join(out.get("text", ""))]
        texts += ["".join(v) for k, v in out.get("data", {}).items() if k.startswith("text/")]
        if out.get("output_type") == "error":
            texts.append(f"{out.get('ename')}: {out.get('evalue')}")
        parts.append((out.get("name") if out.get("output_type") == "stream" else None, "\n".join(texts)))
    return "\n".join(text for _, text in parts)


def _emulated_cells() -> list[tuple[str, str, dict]]:
    found = []
    for folder in ("notebooks", "solutions"):
        for path in sorted((ROOT / folder).glob("*.ipynb")):
            name = f"{folder}/{path.name}"
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            helpers: set[str] = set()  # functions and classes defined in cells that enter one
            for cell in cells:
                if cell["cell_type"] != "code":
                    continue
                source = "".join(cell["source"])
                if enters(source, helpers):
                    helpers |= set(DEFINES.findall(source))
                elif cell.get("id") not in READS_AN_EMULATED_RUN.get(name, ()):
                    continue
                if cell.get("outputs"):
                    found.append((name, cell.get("id"), cell))
    return found


def enters(source: str, helpers: set[str]) -> bool:
    """Whether code entering an emulation runs in this cell (see the module's docstring)."""
    if ENTERS.search(source) or RAISES_AN_EMULATED_ERROR.search(source):
        return True
    called = set(re.findall(r"\b(\w+)\s*\(", source)) - set(DEFINES.findall(source))
    return bool(called & helpers)


# A finding as the toolkit prints it: a sentinel line, or a `course watch` finding (its severity
# row and the indented lines under it, up to the next row).
SENTINEL_LINE = re.compile(r"^sentinel: step \d+: [A-Z][A-Z -]+ .*$", re.MULTILINE)
WATCH_FINDING = re.compile(r"^(?:bug|perf|info)\s{2,}\S.*\n(?:[ \t]+.*\n?)*", re.MULTILINE)


def findings_in(text: str) -> list[str]:
    return SENTINEL_LINE.findall(text) + WATCH_FINDING.findall(text)


CELLS = _emulated_cells()


@pytest.mark.parametrize("notebook, cell_id, cell", CELLS, ids=[f"{n}:{c}" for n, c, _ in CELLS])
def test_does_every_output_made_under_an_emulation_say_emulated(notebook, cell_id, cell):
    text = _output_text(cell)
    assert "emulated" in text.lower(), (
        f"{notebook} cell {cell_id} runs under an emulation but its output never says "
        f"'emulated':\n{text[:400]}")


@pytest.mark.parametrize("notebook, cell_id, cell", CELLS, ids=[f"{n}:{c}" for n, c, _ in CELLS])
def test_does_every_finding_reported_under_an_emulation_say_emulated_itself(notebook, cell_id, cell):
    unlabelled = [f for f in findings_in(_output_text(cell)) if "emulated" not in f.lower()]
    assert not unlabelled, (f"{notebook} cell {cell_id}: findings made under an emulation that do "
                            "not say 'emulated':\n" + "\n".join(unlabelled))


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


def test_does_the_scan_see_made_up_errors_and_helpers_defined_under_an_emulation():
    assert enters('    raise torch.OutOfMemoryError("CUDA out of memory (emulated)")', set())
    assert enters('raise RuntimeError(f"MPS backend out of memory (emulated: {n} rows)")', set())
    assert not enters('raise ValueError("labels out of range")', set())
    assert enters("seen = fallback_warnings(3)", {"fallback_warnings"})
    assert not enters("def fallback_warnings(calls):\n    return []", {"fallback_warnings"})
    assert not enters("print(len(seen))", {"fallback_warnings"})


def test_does_the_finding_scan_see_sentinel_lines_and_watch_findings():
    text = ("sentinel: step 2: FROZEN up.weight: gradient norm 0.03: its updates never land\n"
            "5 findings in 20 steps\n"
            "severity  kind            where        step\n"
            "bug       frozen          train.py:8   0\n"
            "    | model = TopKSAE()\n"
            "    encoder.weight: the updates are lost (emulated: mps_inplace_bug())\n"
            "bug       non-contiguous  train.py:16  1\n"
            "    encoder.weight has strides (1, 96)\n")
    found = findings_in(text)
    assert len(found) == 3 and found[0].startswith("sentinel: step 2: FROZEN")
    assert [("emulated" in f) for f in found] == [False, True, False]


# What only a Mac (or a full memory) shows, as it appears in an output; a mention in prose (a quiz
# question about running out of memory, a hint about frozen parameters) is not one.
SHOWS_A_MAC_PHENOMENON = re.compile(
    r"(?:MPS backend|CUDA) out of memory|OutOfMemoryError|^(?:\[[^\]]*\] )?out of memory[ :]"
    r"|will\s+fall\s+back\s+to\s+run\s+on\s+the\s+CPU|is\s+not\s+currently\s+implemented\s+for\s+the\s+MPS\s+device"
    r"|\bFROZEN\b|updates never land|the updates are lost"
    r"|\bdevice: mps\b|\bmps×\d|\bon the affected Mac\b", re.MULTILINE)


def _cells_showing_a_mac_phenomenon() -> list[tuple[str, str, str]]:
    found = []
    for folder in ("notebooks", "solutions"):
        for path in sorted((ROOT / folder).glob("*.ipynb")):
            for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
                text = _output_text(cell) if cell["cell_type"] == "code" else ""
                if SHOWS_A_MAC_PHENOMENON.search(text):
                    found.append((f"{folder}/{path.name}", cell.get("id"), text))
    return found


SHOWING = _cells_showing_a_mac_phenomenon()


@pytest.mark.parametrize("notebook, cell_id, text", SHOWING, ids=[f"{n}:{c}" for n, c, _ in SHOWING])
def test_does_every_output_showing_a_mac_phenomenon_say_emulated(notebook, cell_id, text):
    shown = SHOWS_A_MAC_PHENOMENON.search(text).group(0)
    assert "emulated" in text.lower(), (
        f"{notebook} cell {cell_id} shows {shown!r}, which this CPU run can only have made under an "
        f"emulation, but its output never says 'emulated':\n{text[:400]}")


def test_does_the_output_scan_find_every_emulated_phenomenon_the_source_scan_finds():
    """The two scans agree on the cells that show OOMs, fallbacks, lost updates and mps tensors."""
    showing = {(n, c) for n, c, _ in SHOWING}
    assert {("notebooks/02_unified_memory.ipynb", "c29"), ("notebooks/02_unified_memory.ipynb", "c31"),
            ("notebooks/04_cpu_fallback.ipynb", "c13"), ("notebooks/06_addcmul_detective.ipynb", "c47"),
            ("notebooks/08_interview_drills.ipynb", "c39")} <= showing
    assert len(showing) >= 15


def test_does_the_phenomenon_pattern_tell_an_event_from_a_mention():
    for shown in ("RuntimeError: MPS backend out of memory (MPS allocated: 1 GiB)",
                  "[emulated OOM] out of memory: retrying rows 0.. with batch size 16",
                  "torch.OutOfMemoryError: CUDA out of memory",
                  "The operator 'aten::cumsum' is not currently supported on the MPS backend and "
                  "will fall back to run\non the CPU.",
                  "sentinel: step 2: FROZEN up.weight: its updates never land",
                  "device: mps | 6 steps", "4  aten::addmm  mps×3  mps  yes  mps"):
        assert SHOWS_A_MAC_PHENOMENON.search(shown), shown
    for mention in ("Q: The model fits for evaluation but training runs out of memory. Why?",
                    "Hint 2/3: Frozen parameters have requires_grad == False",
                    "numpy  .numpy(): on mps/cuda this raises until you add .cpu()",
                    "MPS state: not built"):
        assert not SHOWS_A_MAC_PHENOMENON.search(mention), mention


def test_is_a_line_printed_in_two_stream_chunks_read_as_one():
    cell = {"outputs": [{"output_type": "stream", "name": "stdout", "text": ["sentinel:"]},
                        {"output_type": "stream", "name": "stdout",
                         "text": [" step 2: FROZEN w: updates never land\n"]}]}
    assert findings_in(_output_text(cell)) == ["sentinel: step 2: FROZEN w: updates never land"]
