"""The course's widgets at laptop sizes: after a lesson's Run All, the page is resized
to each of ``VIEWPORTS`` and every course widget (they carry the ``mpsd-fit`` class) is measured
in the browser: no button narrower than its label, no row wider than its output area, no choice
drawn over another, no word of its text (or of anything the lesson printed) split across two
lines. The page at each size, and its first few widgets at the narrow size, are kept as
screenshots under build/screenshots/ (every widget at both sizes would cost the suite ~20 s)."""

from __future__ import annotations

from pathlib import Path

from course_utils.learner.widgets import FIT_CLASS

VIEWPORTS = ({"width": 1280, "height": 800}, {"width": 900, "height": 900})
WIDGET_SHOTS = 4  # widgets kept as screenshots per lesson, at the narrowest size
# Resolves once the page has laid itself out for the new size: the window has it, and three
# animation frames have passed (Lumino lays out its panels on the frame after a resize).
SETTLED = """async (width) => {
    for (let i = 0; i < 3; i++) await new Promise(r => requestAnimationFrame(r));
    return window.innerWidth === width;
}"""
# Every problem of every visible course widget, as text, and every word split in what the lesson
# printed. A word is a run of letters inside a token of at most 30 characters (a longer token,
# such as a dotted path, may break where it must); it is split when its letters lie on two lines.
PROBLEMS = """(fitClass) => {
    const problems = [];
    const shown = el => el.offsetParent !== null && el.getClientRects().length > 0;
    const name = el => (el.innerText || el.className || '').trim().split('\\n')[0].slice(0, 50);
    const lines = range => new Set([...range.getClientRects()].filter(r => r.width > 0)
        .map(r => Math.round(r.top))).size;
    for (const box of document.querySelectorAll(`.jp-OutputArea-output .${fitClass}`)) {
        if (!shown(box)) continue;
        const area = box.closest('.jp-OutputArea-output').getBoundingClientRect();
        for (const button of box.querySelectorAll('button')) {
            if (shown(button) && button.scrollWidth > button.clientWidth + 1)
                problems.push(`button "${name(button)}" is ${button.clientWidth} px, `
                              + `its label needs ${button.scrollWidth} px`);
        }
        for (const group of box.querySelectorAll('.widget-radio-box')) {
            const labels = [...group.querySelectorAll('label')].filter(shown)
                .map(l => [l, l.getBoundingClientRect()]);
            for (let i = 1; i < labels.length; i++)
                if (labels[i][1].top < labels[i - 1][1].bottom - 1)
                    problems.push(`choice "${name(labels[i][0])}" overlaps the one above it`);
        }
        for (const el of box.querySelectorAll('.widget-hbox, .widget-vbox, pre')) {
            if (!shown(el)) continue;
            // a box that scrolls sideways holds its wide content (a diff's long lines)
            const scrolls = ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
            if (scrolls && el.getBoundingClientRect().right <= area.right + 1) continue;
            const right = el.getBoundingClientRect().right;
            if (el.scrollWidth > el.clientWidth + 1 || right > area.right + 1)
                problems.push(`"${name(el)}" overflows: ${el.scrollWidth} px of content in `
                              + `${el.clientWidth} px, right edge ${Math.round(right)} > `
                              + `${Math.round(area.right)}`);
        }
    }
    // the words of every widget's text and of everything the lesson printed
    const texts = [...document.querySelectorAll(`.jp-OutputArea-output .${fitClass}`),
                   ...document.querySelectorAll('.jp-OutputArea-output .jp-RenderedText pre')];
    for (const box of texts) {
        if (!shown(box)) continue;
        const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            if (!node.parentElement || !shown(node.parentElement)) continue;
            for (const token of node.data.matchAll(/\\S+/g)) {
                if (token[0].length > 30) continue;
                for (const word of token[0].matchAll(/[A-Za-z]{2,}/g)) {
                    const range = document.createRange();
                    const start = token.index + word.index;
                    range.setStart(node, start);
                    range.setEnd(node, start + word[0].length);
                    if (lines(range) > 1) problems.push(`the word "${word[0]}" is split across `
                                                        + `lines in "${name(node.parentElement)}"`);
                }
            }
        }
    }
    return problems;
}"""


# Every shown diff: its number of non-empty lines, the distinct line tops of its text (equal when
# no line wraps, so each visual line carries its +/- marker), its width and its content's width.
DIFF_LINES = """(diffClass) => [...document.querySelectorAll(`.jp-OutputArea-output pre.${diffClass}`)]
    .filter(pre => pre.offsetParent !== null).map(pre => {
        const range = document.createRange();
        range.selectNodeContents(pre);
        const tops = new Set([...range.getClientRects()].filter(r => r.width > 0)
            .map(r => Math.round(r.top)));
        return [pre.textContent.split('\\n').filter(line => line.length > 0).length, tops.size,
                pre.clientWidth, pre.scrollWidth];
    })"""
NARROW = {"width": 640, "height": 900}  # narrower than any course page: the longest lines overflow


def diff_problems(page, sizes=(*VIEWPORTS, NARROW)) -> tuple[dict[str, list[str]], int]:
    """At each size, the diffs shown whose lines wrap (a visual line without its marker), and how
    many diffs were wider than their box somewhere (so the check met a line that could wrap)."""
    from course_utils.learner.code_diff import DIFF_CLASS

    found, overflowed = {}, 0
    for size in sizes:
        page.set_viewport_size(size)
        assert page.evaluate(SETTLED, size["width"])
        diffs = page.evaluate(DIFF_LINES, DIFF_CLASS)
        assert diffs, "no diff is shown"
        found[f"{size['width']}x{size['height']}"] = [
            f"a diff of {lines} lines is drawn on {tops} lines ({width} px wide, {content} px of "
            "content)" for lines, tops, width, content in diffs if tops != lines]
        overflowed += sum(content > width for _, _, width, content in diffs)
    return found, overflowed


def check_viewports(page, lesson: str, folder: Path) -> dict[str, list[str]]:
    """Resize ``page`` to each viewport, keep screenshots (the page; a few widgets) in ``folder``,
    and return the problems found at each size (an empty list when the widgets fit)."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = lesson.removesuffix(".ipynb")
    found = {}
    for size in VIEWPORTS:
        label = f"{size['width']}x{size['height']}"
        page.set_viewport_size(size)
        assert page.evaluate(SETTLED, size["width"]), f"the page did not take the {label} size"
        found[label] = page.evaluate(PROBLEMS, FIT_CLASS)
        page.screenshot(path=str(folder / f"{stem}-{label}.png"))
        if size is not VIEWPORTS[-1]:
            continue
        widgets = page.locator(f".jp-OutputArea-output .{FIT_CLASS}")
        for i in range(min(widgets.count(), WIDGET_SHOTS)):
            widget = widgets.nth(i)
            if widget.is_visible():
                widget.screenshot(path=str(folder / f"{stem}-{label}-widget{i + 1}.png"))
    return found
