"""Does the StrideExplorer respond to its widgets, and show the layout it claims?"""

import pytest
import torch

from course_utils.learner.stride_explorer import OPS, StrideExplorer, parse_ints, render_png


@pytest.fixture
def explorer():
    return StrideExplorer((3, 4))


def press(explorer, op, args=None):
    """What a learner does: choose the op, maybe type args, click apply."""
    explorer.op_box.value = op
    if args is not None:
        explorer.args_box.value = args
    explorer.apply_button.click()


def test_it_starts_from_a_fresh_contiguous_tensor_of_storage_positions(explorer):
    assert torch.equal(explorer.tensor, torch.arange(12.).reshape(3, 4))
    assert explorer.layout.contiguous and not explorer.layout.is_view
    assert "(4, 1)" in explorer.info.value and bytes(explorer.picture.value).startswith(b"\x89PNG")


def test_the_widgets_have_stable_descriptions_for_browser_tests(explorer):
    described = [explorer.shape_box, explorer.op_box, explorer.args_box, explorer.apply_button,
                 explorer.undo_button, explorer.reset_button]
    assert [w.description for w in described] == ["shape", "op", "args", "apply", "undo", "reset"]
    assert "stride-explorer" in explorer.widget._dom_classes
    assert list(explorer.op_box.options) == list(OPS)


def test_clicking_apply_transposes_and_updates_strides_code_and_picture(explorer):
    before = explorer.picture.value
    press(explorer, "transpose", "0, 1")
    assert explorer.tensor.stride() == (1, 4) and not explorer.layout.contiguous
    assert "stride          (1, 4)" in explorer.info.value
    assert "t = t.transpose(0, 1)" in explorer.code.value
    assert explorer.picture.value != before


def test_a_slice_with_a_step_after_narrow_moves_the_offset(explorer):
    press(explorer, "narrow", "0, 1, 2")
    press(explorer, "slice with step", "1, 2")
    assert explorer.layout.short() == "shape (2, 2) stride (4, 2) offset 4 NON-contiguous"
    assert torch.equal(explorer.tensor, torch.arange(12.).reshape(3, 4)[1:3, ::2])


def test_choosing_an_op_fills_in_default_args_for_the_current_shape(explorer):
    explorer.shape_box.value = "2, 3, 4"
    explorer.op_box.value = "permute"
    assert explorer.args_box.value == "2, 1, 0" and explorer.args_box.placeholder == "dims"
    explorer.apply_button.click()
    assert explorer.tensor.shape == (4, 3, 2) and explorer.tensor.stride() == (1, 4, 12)


def test_expand_unsqueeze_and_contiguous_chain_and_undo_steps_back(explorer):
    press(explorer, "unsqueeze", "0")
    press(explorer, "expand")  # default args: the size-1 dim becomes 3
    assert explorer.tensor.shape == (3, 3, 4) and explorer.tensor.stride() == (0, 4, 1)
    assert explorer.layout.storage_elements == 12
    press(explorer, ".contiguous()")
    assert explorer.layout.contiguous and explorer.layout.storage_elements == 36
    explorer.undo_button.click()
    assert explorer.tensor.stride() == (0, 4, 1) and len(explorer.steps) == 2


def test_dot_t_and_channels_last_on_a_4d_tensor(explorer):
    explorer.shape_box.value = "2, 3, 2, 2"
    press(explorer, "channels_last")
    assert explorer.layout.memory_format == "channels_last"
    assert explorer.tensor.stride() == (12, 1, 6, 3)
    press(explorer, ".T")
    assert explorer.tensor.shape == (2, 2, 3, 2)
    assert "deprecated for 4-D" in explorer.code.value


def test_a_bad_op_shows_why_and_keeps_the_state(explorer):
    press(explorer, "channels_last")
    assert "needs a 4-D" in explorer.message.value and explorer.steps == []
    press(explorer, "transpose", "0, 5")
    assert "failed" in explorer.message.value and explorer.steps == []
    press(explorer, "transpose", "zero, one")
    assert "whole numbers" in explorer.message.value
    press(explorer, "expand", "100, 100")
    assert explorer.steps == []
    press(explorer, "transpose", "0, 1")
    assert explorer.message.value == "" and len(explorer.steps) == 1


def test_a_new_shape_resets_and_a_bad_shape_is_refused(explorer):
    press(explorer, "transpose", "0, 1")
    explorer.shape_box.value = "4, 2"
    assert explorer.steps == [] and explorer.tensor.shape == (4, 2)
    explorer.shape_box.value = "100, 100"
    assert "at most" in explorer.message.value and explorer.tensor.shape == (4, 2)
    explorer.reset_button.click()
    assert explorer.shape_box.value == "4, 2"


def test_driving_it_from_code_gives_the_same_result_as_clicking():
    a, b = StrideExplorer((2, 3, 4)), StrideExplorer((2, 3, 4))
    assert a.apply("permute", 2, 0, 1) and a.apply("slice with step", 0, 2)
    press(b, "permute", "2, 0, 1")
    press(b, "slice with step", "0, 2")
    assert a.code_text() == b.code_text() and torch.equal(a.tensor, b.tensor)
    assert a.apply("no such op") is False and "unknown op" in a.message.value


def test_its_display_has_a_short_stable_text_stand_in(explorer):
    data = explorer._repr_mimebundle_()
    assert data["text/plain"] == ("StrideExplorer on a (3, 4) tensor: choose an op, set its args, "
                                  "press apply")
    assert "application/vnd.jupyter.widget-view+json" in data


def test_parse_ints_and_render_png():
    assert parse_ints("(2, 3,4)") == (2, 3, 4) and parse_ints(" ") == ()
    assert render_png(torch.zeros(2, 2)).startswith(b"\x89PNG")


def _label_boxes(fig):
    """Each picture's cell numbers and their boxes in pixels, once the figure is laid out."""
    from course_utils.toolkit.layout import LABEL_GID

    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    return [(ax, [(t.get_text(), t.get_window_extent(renderer)) for t in ax.texts
                  if t.get_gid() == LABEL_GID]) for ax in fig.axes]


def _overlaps(labels, gap: float) -> list[str]:
    found = []
    for i, (a, box_a) in enumerate(labels):
        for b, box_b in labels[i + 1:]:
            if (box_a.x0 < box_b.x1 + gap and box_b.x0 < box_a.x1 + gap
                    and box_a.y0 < box_b.y1 + gap and box_b.y0 < box_a.y1 + gap):
                found.append(f"{a} and {b}")
    return found


def _explored():
    """Tensors the explorer accepts (1 to 1024 elements, 1 to 4 dims) after the learner's ops:
    storages of 1 to 33 elements (numbered or not), 3-digit numbers, views with gaps."""
    arange = torch.arange
    return [arange(1.), arange(24.), arange(24.).reshape(2, 3, 4).permute(2, 0, 1),
            arange(32.).reshape(4, 8)[:, ::2], arange(32.), arange(33.),
            arange(160.).reshape(10, 16).T, arange(144.).reshape(12, 12)[1:],
            arange(3.).unsqueeze(1).expand(3, 8), arange(1024.).reshape(4, 4, 8, 8)]


@pytest.mark.parametrize("t", list(_explored()), ids=lambda t: f"{tuple(t.shape)}{t.stride()}")
def test_no_cell_number_overlaps_another_or_leaves_its_picture_and_small_storage_is_numbered(t):
    """The explorer's picture (and plot_storage's, three tensors side by side) at any size it
    accepts: numbers keep a 3 px gap (the picture is shown at 80 % of its pixels), stay inside
    their axes, are never under the course's smallest text size, and a storage of up to 32
    elements is numbered (a 24-element storage once overlapped its numbers)."""
    import matplotlib.pyplot as plt

    from course_utils.learner.stride_explorer import storage_figure
    from course_utils.toolkit.layout import LABELLED_STORAGE, describe, plot_storage
    from course_utils.toolkit.plotstyle import too_small

    explorer = storage_figure(t, "numbers = storage positions")
    side_by_side = plot_storage(t, t.contiguous(), t.flatten()[:3])
    try:
        for fig in (explorer, side_by_side):
            assert too_small(fig) == []
            for ax, labels in _label_boxes(fig):
                assert _overlaps(labels, gap=3) == []
                outside = [text for text, box in labels if not (
                    ax.bbox.x0 <= box.x0 and box.x1 <= ax.bbox.x1
                    and ax.bbox.y0 <= box.y0 and box.y1 <= ax.bbox.y1)]
                assert outside == []
        storage_labels = _label_boxes(explorer)[1][1]
        if describe(t).storage_elements <= LABELLED_STORAGE:
            assert len(storage_labels) == len(set(t.flatten().tolist())), "storage not numbered"
    finally:
        plt.close(side_by_side)
