"""Does check() pass, fail, explain and record exactly as lesson 00 promises?"""


import pytest

from course_utils import CheckFailed, bank, check, hint
from course_utils.core import progress


def test_a_correct_answer_prints_one_pass_line_and_records_progress(capsys):
    exercise = bank.get("01.batch_bytes")
    check("01.batch_bytes", exercise.reference)
    out = capsys.readouterr().out
    assert out == f"✔ 01.batch_bytes passed: {len(exercise.fixed())} fixed + 20 random cases.\n"
    assert progress.load()["exercises"]["01.batch_bytes"]["passed"] is True


def test_a_wrong_answer_raises_with_case_expected_got_and_first_hint():
    with pytest.raises(CheckFailed) as info:
        check("01.batch_bytes", lambda shape, dtype: 0, seed=3)
    err = info.value
    assert err.case_label == "lesson 01's batch (32, 128, 768) float32"
    assert err.expected == "12582912" and err.got == "0"
    text = str(err)
    assert "expected: 12582912" in text and "got:      0" in text and "hint:" in text
    assert "seed=3" in text
    entry = progress.load()["exercises"]["01.batch_bytes"]
    assert (entry["attempts"], entry["passed"], entry["last"]) == (1, False, "fail")


def test_the_same_code_checked_again_is_not_a_new_attempt_but_new_code_is():
    def wrong(shape, dtype):
        return 0

    def also_wrong(shape, dtype):
        return 1

    for answer in (wrong, wrong, also_wrong, wrong):
        with pytest.raises(CheckFailed):
            check("01.batch_bytes", answer, seed=3)
    assert progress.load()["exercises"]["01.batch_bytes"]["attempts"] == 2


def test_a_failure_renders_without_a_stack_trace_in_ipython():
    with pytest.raises(CheckFailed) as info:
        check("01.batch_bytes", lambda shape, dtype: 0, seed=3)
    rendered = info.value._render_traceback_()
    assert rendered[0].startswith("CheckFailed: 01.batch_bytes: failed")
    assert not any("File " in line for line in rendered)


def test_an_unsolved_stub_raises_not_implemented_with_the_exercise_id():
    def stub(shape, dtype):
        raise NotImplementedError("01.batch_bytes: your code here")

    with pytest.raises(NotImplementedError, match="01.batch_bytes is not solved yet"):
        check("01.batch_bytes", stub)


def test_a_mistyped_id_suggests_the_close_ones():
    with pytest.raises(KeyError, match="Did you mean 01.batch_bytes"):
        check("01.batch_byte", bank.get("01.batch_bytes").reference)


def test_passing_a_value_instead_of_a_function_is_a_clear_type_error():
    with pytest.raises(TypeError, match="answer must be your function"):
        check("01.batch_bytes", 12582912)


def test_an_answer_that_mutates_its_input_cannot_corrupt_the_reference():
    def greedy(model):
        for p in model.parameters():
            p.requires_grad_(True)
        return sum(p.numel() for p in model.parameters())

    with pytest.raises(CheckFailed):
        check("00.count_params", greedy, seed=1)


def test_hints_climb_one_rung_per_new_cell_and_stop_at_the_last(capsys):
    hint("01.batch_bytes")
    hint("01.batch_bytes")
    hint("01.batch_bytes")
    hint("01.batch_bytes")
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" for")[0] for line in lines] == ["Hint 1/3", "Hint 2/3", "Hint 3/3",
                                                         "Hint 3/3"]
    assert lines[-1].endswith(bank.get("01.batch_bytes").hints[-1]) and "(last hint)" in lines[-1]


def test_the_same_cell_asking_again_sees_the_same_hint(capsys):
    for _ in range(3):  # one call site, as a cell re-run by Run All
        hint("01.batch_bytes")
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" for")[0] for line in lines] == ["Hint 1/3"] * 3


def test_the_first_hint_after_a_failure_is_the_next_one(capsys):
    with pytest.raises(CheckFailed):
        check("01.batch_bytes", lambda shape, dtype: 0, seed=3)  # prints hint 1
    hint("01.batch_bytes")
    assert capsys.readouterr().out.startswith("Hint 2/3")

def test_hints_and_failures_are_plain_text_without_raw_backticks(capsys):
    assert "`" in bank.get("06.hunt").hints[0]
    hint("06.hunt")
    shown = capsys.readouterr().out
    assert shown.startswith("Hint 1/") and "`" not in shown
    with pytest.raises(CheckFailed) as info:
        check("06.hunt", lambda *args, **kwargs: None, seed=0)
    assert "hint:" in str(info.value) and "`" not in info.value.first_hint


def test_an_unsolved_stub_shows_one_line_and_no_course_frames():
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    shell = InteractiveShell.instance()
    source = ("from course_utils import check\n"
              "def batch_bytes(shape, dtype):\n    raise NotImplementedError('your answer here')\n"
              "check('01.batch_bytes', batch_bytes)")
    with capture_output() as shown:
        result = shell.run_cell(source, store_history=False)
    text = (shown.stdout + shown.stderr).strip()
    assert isinstance(result.error_in_exec, NotImplementedError)
    assert text == ("01.batch_bytes is not solved yet: replace the NotImplementedError in its cell "
                    "with your answer, then run this check again."), text
    assert "course_utils" not in text and "Traceback" not in text
