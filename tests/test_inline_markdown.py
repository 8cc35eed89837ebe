"""Do hints, questions and explanations show their words, not their markdown marks, wherever they
appear: printed (check() failures, hint(), the text forms) and in widgets (as HTML)?"""

from __future__ import annotations

import re

import pytest

from course_utils.core.questions import as_html, plain

RAW_MARK = re.compile(r"(?<![\w*])\*\*?[^\s*][^*]*?(?<=[^\s*])\*\*?(?![\w*])|\\[*_`]|`")
CASES = [  # text, as printed, as HTML
    ("built *and* available", "built and available", "built <em>and</em> available"),
    ("**never** twice", "never twice", "<strong>never</strong> twice"),
    ("*one `x*y` two*", "one x*y two", "<em>one <code>x*y</code> two</em>"),
    (r"a literal \*star\* and \`tick\`", "a literal *star* and `tick`",
     "a literal *star* and `tick`"),
    ("B*S rows, 2 * 3, a*b*c, *args, x ** 2", "B*S rows, 2 * 3, a*b*c, *args, x ** 2",
     "B*S rows, 2 * 3, a*b*c, *args, x ** 2"),
    ("`__init__` and __next__", "__init__ and __next__", "<code>__init__</code> and __next__"),
    ("<b>&</b> *em*", "<b>&</b> em", "&lt;b&gt;&amp;&lt;/b&gt; <em>em</em>"),
    ("an unclosed *star and a `tick", "an unclosed *star and a tick",
     "an unclosed *star and a tick"),
]


@pytest.mark.parametrize(("text", "printed", "shown"), CASES)
def test_inline_markdown_is_rendered_as_words_or_html(text, printed, shown):
    assert plain(text) == printed
    assert as_html(text) == shown


def _texts():
    import importlib

    from course_utils import bank, drills

    for ex in bank.REGISTRY.items():
        yield from ((ex.id, h) for h in ex.hints)
    for d in drills.REGISTRY.items():
        yield from ((d.id, t) for t in (*d.hints, d.why, d.question.prompt, *d.question.choices))
    for lesson in bank.LESSONS:
        quiz = importlib.import_module(f"course_utils.bank.{lesson}.mastery_quiz").QUIZ
        for q in quiz.questions:
            yield from ((lesson, t) for t in (q.prompt, *q.choices, q.why))


def test_no_printed_hint_question_or_explanation_keeps_a_markdown_mark():
    left = [(key, plain(text)) for key, text in _texts() if RAW_MARK.search(plain(text))]
    assert not left, left[:5]


def test_a_failed_check_and_hint_print_the_hint_without_its_marks(progress_home, capsys):
    from course_utils.learner.checking import CheckFailed, check, hint

    hint("01.choose_device")  # the first hint on the ladder
    shown = capsys.readouterr().out
    assert "built and available" in shown and "*" not in shown
    with pytest.raises(CheckFailed) as failed:
        check("01.choose_device", lambda *args: "cpu", seed=0)
    assert "built and available" in str(failed.value) and "*" not in str(failed.value)
