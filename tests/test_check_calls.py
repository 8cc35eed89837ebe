"""Does the one reader of ``check("ID", answer)`` calls find each call, its id, its answer and its
line, in cells that parse, that hold magics, and that do not parse? Property tests (hypothesis) for
the invariants every reader relies on."""

import keyword
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from course_utils.core.check_calls import MAX_PARSE_CHARS, CheckCall, check_calls, parse_cell


@pytest.mark.parametrize("source, expected", [
    ('check("01.batch_bytes", batch_bytes)', [CheckCall("01.batch_bytes", "batch_bytes", 1)]),
    ("x = 1\ncourse_utils.check('01.a', answer=mine)", [CheckCall("01.a", "mine", 2)]),
    ("check(exercise_id='01.b', answer=lambda r: r)", [CheckCall("01.b", "lambda r: r", 1)]),
    ("check(name, fn)", [CheckCall(None, "fn", 1)]),
    ('check("01.c")', [CheckCall("01.c", None, 1)]),
    ("checker('01.d', f)\nrecheck('01.e', f)\nx.checks('01.f', f)", []),
    ("%time y = 2\ncheck('01.g', g)", [CheckCall("01.g", "g", 2)]),
    ("!pip list\nif True:\n    check('01.h', h)", [CheckCall("01.h", "h", 3)]),
])
def test_each_call_is_found_with_its_id_answer_and_line(source, expected):
    assert check_calls(source) == expected


def test_calls_come_in_source_order_even_when_nested():
    source = "f(check('01.a', a))\ncheck('01.b', b)\nfor _ in []:\n    check('01.c', c)"
    assert [c.exercise_id for c in check_calls(source)] == ["01.a", "01.b", "01.c"]
    assert [c.exercise_id for c in check_calls("check('01.x', check('01.y', y))")] == ["01.x", "01.y"]


def test_a_cell_that_does_not_parse_still_names_its_literal_ids():
    source = "def broken(:\n    pass\ncheck('01.batch_bytes', batch_bytes)"
    assert parse_cell(source) is None
    assert check_calls(source) == [CheckCall("01.batch_bytes", None, 3)]


def test_a_cell_too_long_to_parse_is_scanned():
    source = "x = 1\n" * (MAX_PARSE_CHARS // 6 + 1) + "check('02.y', y)"
    assert parse_cell(source) is None
    assert check_calls(source) == [CheckCall("02.y", None, MAX_PARSE_CHARS // 6 + 2)]


def test_a_tree_the_caller_parsed_is_read_as_is():
    tree = parse_cell("check('03.z', z)")
    assert check_calls(tree) == check_calls("check('03.z', z)") == [CheckCall("03.z", "z", 1)]


def test_magic_lines_are_blanked_so_line_numbers_stay():
    tree = parse_cell("%matplotlib inline\n!ls\nx = 1")
    assert tree is not None and tree.body[0].lineno == 3


# --- properties -----------------------------------------------------------------------------------

IDS = st.from_regex(r"\d\d\.[a-z][a-z0-9_]{0,20}", fullmatch=True)
NAMES = st.text(string.ascii_lowercase + "_", min_size=1, max_size=12).filter(
    lambda s: not keyword.iskeyword(s) and s != "check")
QUOTES = st.sampled_from(["'", '"'])
FILLER = st.lists(st.sampled_from(["x = 1", "print('hi')", "%time y = 2", "!ls", "# check later",
                                   "def f(a):\n    return a", ""]), max_size=4)


@given(ids=st.lists(IDS, min_size=1, max_size=4), answer=NAMES, quote=QUOTES, before=FILLER,
       after=FILLER, broken=st.booleans())
def test_every_literal_id_is_found_in_order_whatever_surrounds_it(ids, answer, quote, before, after,
                                                                   broken):
    calls = [f"check({quote}{i}{quote}, {answer})" for i in ids]
    lines = [*before, *calls, *after] + (["def broken(:"] if broken else [])
    source = "\n".join(lines)
    found = check_calls(source)
    assert [c.exercise_id for c in found] == ids
    first = sum(line.count("\n") + 1 for line in before) + 1
    assert [c.line for c in found] == [first + k for k in range(len(ids))]
    assert all(c.answer == (None if broken else answer) for c in found)


@given(st.text(max_size=200))
def test_any_text_is_read_without_an_error_and_every_id_is_a_string(text):
    for call in check_calls(text):
        assert call.exercise_id is None or isinstance(call.exercise_id, str)
        assert call.line >= 1
