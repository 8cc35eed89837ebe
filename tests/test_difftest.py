"""Does the differential test find layout bugs, and only them (lesson 06)?"""

import pytest
import torch

from course_utils.toolkit.difftest import DEFAULT_OPS, LAYOUTS, OpSpec, check_one, lay_out, sweep
from course_utils.toolkit.emulate.inplace import mps_inplace_bug

NON_CONTIGUOUS_OUTPUTS = ["transposed", "stepped", "narrowed", "permuted 3-D", "channels_last"]


@pytest.fixture(scope="module")
def healthy():
    return sweep(device="cpu")


@pytest.fixture(scope="module")
def emulated():
    with mps_inplace_bug(device="cpu"):
        return sweep(device="cpu")


def test_does_the_default_sweep_find_nothing_on_a_healthy_cpu(healthy):
    assert healthy.problems == [] and healthy.counts()["ok"] > 500


def test_does_the_default_cover_pointwise_reduction_and_matmul_ops_used_in_training():
    assert {"addcmul", "addcdiv", "lerp", "mul", "sqrt", "sum", "softmax", "mm", "linear"} <= set(DEFAULT_OPS)


def test_does_it_flag_exactly_addcmul_and_addcdiv_in_place_under_the_emulation(emulated):
    assert emulated.flagged() == ["addcdiv_", "addcmul_"]
    for name in ("addcmul_", "addcdiv_"):
        assert emulated.flagged_layouts(name) == NON_CONTIGUOUS_OUTPUTS
    assert {c.status for c in emulated.problems} == {"unchanged"}


def test_does_it_find_a_bug_planted_in_another_op():
    with mps_inplace_bug(("lerp_", "sqrt_"), device="cpu"):
        result = sweep(["lerp", "sqrt", "mul", "addcmul"], device="cpu")
    assert result.flagged() == ["lerp_", "sqrt_"]


def test_does_the_summary_and_table_name_the_problems(emulated):
    text = str(emulated)
    assert "10 problems in addcdiv_, addcmul_" in text and "channels_last" in text and "unchanged" in text


@pytest.mark.parametrize("layout, contiguous, offset", [
    ("contiguous", True, False), ("transposed", False, False), ("stepped", False, False),
    ("narrowed", False, True), ("channels_last", False, False),
])
def test_does_lay_out_keep_the_values_and_give_the_named_layout(layout, contiguous, offset):
    values = torch.randn(2, 3, 4, 5)
    t = lay_out(values, layout, "cpu")
    assert torch.equal(t, values) and t.is_contiguous() is contiguous
    assert (t.storage_offset() > 0) is offset


def test_is_expanded_a_stride_0_input_but_never_a_written_tensor():
    values = torch.randn(1, 5).expand(4, 5).contiguous()
    assert lay_out(values, "expanded", "cpu").stride(0) == 0
    assert lay_out(values, "expanded", "cpu", written=True).is_contiguous()


def test_is_permuted_3d_non_contiguous_and_na_for_a_2d_only_op():
    assert not lay_out(torch.randn(2, 3, 4), "permuted 3-D", "cpu").is_contiguous()
    assert check_one(OpSpec("mm", 2, ranks=(2,), shapes=lambda s: [(4, 6), (6, 5)]), "out-of-place",
                     "permuted 3-D", "cpu").status == "n/a"


def test_is_a_wrong_result_a_mismatch_and_a_raising_op_an_error():
    def wrong_when_strided(x):
        return x * 2 if x.is_contiguous() else x * 3

    def refuses_strided(x):
        if not x.is_contiguous():
            raise RuntimeError("strided input")
        return x * 2

    bad = sweep([OpSpec("wrong", fn=wrong_when_strided), OpSpec("refuses", fn=refuses_strided)],
                variants=["out-of-place"], device="cpu")
    statuses = {(c.op, c.layout): c.status for c in bad.checks}
    assert statuses[("wrong", "contiguous")] == "ok" and statuses[("wrong", "transposed")] == "mismatch"
    assert statuses[("refuses", "stepped")] == "error"


def test_are_unknown_ops_and_layouts_refused():
    with pytest.raises(KeyError, match="knows no op"):
        sweep(["frobnicate"], device="cpu")
    with pytest.raises(ValueError, match="unknown layouts"):
        sweep(["mul"], layouts=["diagonal"], device="cpu")


def test_does_the_heatmap_draw_one_row_per_in_place_op_and_one_column_per_layout(emulated):
    import matplotlib.pyplot as plt

    fig = emulated.heatmap()
    try:
        rows = {c.name for c in emulated.checks if c.variant == "in-place" and c.status != "n/a"}
        ax = fig.axes[0]
        assert {t.get_text() for t in ax.get_yticklabels()} == rows
        assert [t.get_text() for t in ax.get_xticklabels()] == list(LAYOUTS)
    finally:
        plt.close(fig)
