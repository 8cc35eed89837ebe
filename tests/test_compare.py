"""Does the comparison say *how* a learner's value differs?"""

import pytest
import torch

from course_utils.core.compare import describe_value, mismatch


def test_equal_tensors_match_even_when_layouts_differ():
    t = torch.arange(12.0).reshape(3, 4)
    assert mismatch(t, t.t().contiguous().t()) is None


@pytest.mark.parametrize("got, words", [
    (torch.zeros(4, 3), "shape (4, 3) != expected (3, 4)"),
    (torch.zeros(3, 4, dtype=torch.float64), "dtype torch.float64"),
    (torch.ones(3, 4), "max abs diff 1"),
    ([1, 2], "expected a tensor"),
])
def test_tensor_mismatches_name_shape_dtype_or_max_diff(got, words):
    assert words in mismatch(torch.zeros(3, 4), got)


def test_nan_in_the_answer_is_reported_as_an_infinite_difference():
    assert "inf" in mismatch(torch.zeros(2), torch.tensor([0.0, float("nan")]))


def test_integer_tensors_report_how_many_positions_differ():
    assert "1 of 3 positions" in mismatch(torch.tensor([1, 2, 3]), torch.tensor([1, 2, 4]))


def test_nested_containers_point_at_the_first_difference():
    assert mismatch({"a": (1, 2.0)}, {"a": (1, 2.5)}).startswith("key 'a': item [1]")


def test_bool_is_not_accepted_for_an_int_and_strings_must_match_exactly():
    assert mismatch(1, True) is not None
    assert mismatch("available", "Available") is not None
    assert mismatch("cpu", "cpu") is None


def test_floats_use_tolerance_and_ints_are_exact():
    assert mismatch(1.0, 1.0 + 1e-9) is None
    assert mismatch(10, 11) == "11 != expected 10"


def test_an_expected_integer_takes_python_and_numpy_integers_and_refuses_floats_and_bools():
    import numpy as np

    assert mismatch(12, 12) is None and mismatch(12, np.int64(12)) is None
    assert mismatch(0, np.uint8(0)) is None
    assert "expected an integer, got float" in mismatch(12, 12.0)  # equal, but a float
    assert "expected an integer, got float" in mismatch(12, 13.0)  # an off-by-one as a float
    assert "expected an integer" in mismatch(12, 12.0 + 1e-7)  # within any relative tolerance
    assert "expected an integer" in mismatch(12, np.float64(12.0))
    assert "expected an integer, got bool" in mismatch(1, True)
    assert "expected an integer" in mismatch(3, torch.tensor(3))
    assert mismatch(2**40 + 1, 2**40) == f"{2**40} != expected {2**40 + 1}"  # exact, however large


def test_describe_value_has_no_memory_addresses():
    class Plain:  # the default repr: <...Plain object at 0x7f...>
        pass

    assert "0x" not in describe_value(Plain()) and "Plain object>" in describe_value(Plain())
    assert describe_value(torch.nn.Linear(2, 2)) == "Linear(in_features=2, out_features=2, bias=True)"
    assert describe_value(torch.zeros(2, 3)) == "tensor(shape=(2, 3), dtype=torch.float32, device=cpu)"
    assert describe_value(ValueError("bad")) == "ValueError: bad"
    assert describe_value("x" * 200) == "'" + "x" * 116 + "..."
