"""Does course_utils.toolkit.layout tell the truth about strides, storage, audits and layout costs?"""

import random

import numpy as np
import pytest
import torch
from torch import nn

from course_utils import bank
from course_utils.bank.lesson05._shared import LAYOUTS, random_layout
from course_utils.bank.lesson05.contiguous_strides import contiguous_strides
from course_utils.bank.lesson05.fix_layout import fix_layout
from course_utils.bank.lesson05.is_contiguous import is_contiguous
from course_utils.bank.lesson05.storage_index import storage_index
from course_utils.bank.lesson05.view_or_copy import view_or_copy
from course_utils.labs.layout_paper import (
    augment,
    augment_times,
    one_thread,
    permute_copy_times,
    reverse_first,
    rises,
    synthetic_images,
)
from course_utils.toolkit.layout import (
    Audit,
    audit,
    contiguous_run,
    describe,
    memory_format,
    plot_storage,
    storage_indices,
)

# --- describe -----------------------------------------------------------------------------------


def test_describe_a_new_tensor_is_contiguous_owns_its_storage_and_counts_bytes():
    info = describe(torch.zeros(3, 4))
    assert (info.shape, info.strides, info.offset) == ((3, 4), (4, 1), 0)
    assert info.contiguous and info.memory_format == "contiguous"
    assert (info.storage_elements, info.storage_bytes, info.dtype) == (12, 48, "float32")
    assert not info.is_view and info.base_shape is None


def test_describe_a_slice_reports_offset_strides_and_the_base_it_views():
    base = torch.zeros(3, 4, dtype=torch.float16)
    info = describe(base[1:, ::2])
    assert (info.shape, info.strides, info.offset) == ((2, 2), (4, 2), 4)
    assert not info.contiguous and info.memory_format == "none"
    assert info.is_view and info.base_shape == (3, 4)
    assert (info.storage_elements, info.storage_bytes) == (12, 24)


def test_describe_an_expanded_tensor_has_a_small_storage_and_stride_zero():
    info = describe(torch.zeros(3, 1).expand(3, 5))
    assert info.strides == (1, 0) and info.storage_elements == 3


def test_memory_format_names_channels_last_and_both_when_ambiguous():
    x = torch.zeros(2, 3, 4, 5)
    assert memory_format(x.contiguous(memory_format=torch.channels_last)) == "channels_last"
    assert memory_format(torch.zeros(2, 1, 4, 5)) == "contiguous and channels_last"
    assert memory_format(torch.zeros(2, 3, 4, 5, 6).contiguous(
        memory_format=torch.channels_last_3d)) == "channels_last_3d"


def test_describe_prints_one_fact_per_line_and_a_short_line():
    text = str(describe(torch.zeros(3, 4).T))
    lines = text.splitlines()
    assert [line.split()[0] for line in lines] == ["shape", "stride", "storage", "contiguous",
                                                   "memory", "storage", "view"]
    assert "stride          (1, 4)" in text and "view            yes, of a tensor of shape (3, 4)" in text
    assert describe(torch.zeros(3, 4).T).short() == "shape (4, 3) stride (1, 4) offset 0 NON-contiguous"


@pytest.mark.parametrize("seed", range(30))
def test_storage_indices_point_at_the_elements_of_random_views(seed):
    rng = random.Random(seed)
    base = torch.arange(600)
    shape, strides, offset, _ = random_layout(rng)
    view = base.as_strided(shape, strides, offset)
    assert torch.equal(base[storage_indices(view)], view)


def test_contiguous_run_counts_the_elements_a_copy_reads_in_a_row():
    x = torch.zeros(1, 4, 4, 4)
    assert contiguous_run(x) == 64
    assert contiguous_run(x.permute(reverse_first(3, 4))) == 4
    assert contiguous_run(x.permute(3, 2, 1, 0)) == 1
    assert contiguous_run(x.permute(1, 0, 2, 3)) == 64  # swapping a size-1 dim changes nothing


# --- plot_storage -------------------------------------------------------------------------------


def _grid_image(fig, col):
    return fig.axes[col].images[0].get_array()


def test_plot_storage_draws_grid_and_storage_for_each_tensor_and_a_transpose_looks_different():
    import matplotlib.pyplot as plt

    t = torch.arange(12.).reshape(3, 4)
    fig = plot_storage(t, t.T, t[:, ::2])
    try:
        assert len(fig.axes) == 6
        assert _grid_image(fig, 0).tolist() == t.tolist()
        assert _grid_image(fig, 1).tolist() == t.T.tolist()  # storage positions down the columns
        storage_row = fig.axes[5].images[0].get_array()  # RGBA: a never-read cell is grey
        grey = [bool(np.allclose(cell[:3], 0xEE / 255)) for cell in storage_row.reshape(-1, 4)]
        assert grey == [False, True] * 6  # every other cell never read
        assert "NOT contiguous" in fig.axes[1].get_title()
    finally:
        plt.close(fig)


def test_plot_storage_refuses_tensors_too_large_to_read():
    import matplotlib.pyplot as plt

    with pytest.raises(ValueError, match="at most"):
        plot_storage(torch.zeros(40, 40))
    plt.close("all")


# --- audit --------------------------------------------------------------------------------------


def _tied_autoencoder():
    model = nn.Sequential()
    model.add_module("encoder", nn.Linear(4, 8))
    model.add_module("decoder", nn.Linear(8, 4))
    model.encoder.weight.data = model.decoder.weight.T.clone()
    return model


def test_audit_finds_the_transposed_clone_and_names_it():
    model = _tied_autoencoder()
    report = audit(model)
    assert isinstance(report, Audit) and report.checked == 4 and len(report) == 1
    (row,) = report
    assert (row.name, row.kind, row.shape, row.strides) == ("encoder.weight", "parameter", (8, 4), (1, 8))
    assert "1 of 4 tensors are NON-contiguous" in str(report) and "encoder.weight" in str(report)


def test_audit_of_a_contiguous_model_is_empty_and_says_so():
    report = audit(nn.Linear(3, 2))
    assert not report and report.names == []
    assert str(report) == "audit: all 2 tensors are contiguous"


def test_audit_follows_the_layout_into_grads_and_adam_state():
    model = _tied_autoencoder()
    opt = torch.optim.Adam(model.named_parameters())
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    names = audit(opt).names
    assert names == ["encoder.weight", "encoder.weight.grad", "state[encoder.weight].exp_avg",
                     "state[encoder.weight].exp_avg_sq"]
    assert audit(model).names == ["encoder.weight", "encoder.weight.grad"]


def test_audit_names_optimizer_tensors_from_the_model_or_by_position():
    model = _tied_autoencoder()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    assert audit(opt).names == ["param_groups[0].params[0]"]
    assert audit(opt, names=model).names == ["encoder.weight"]


def test_audit_reports_buffers_and_rejects_other_objects():
    bn = nn.BatchNorm1d(4)
    bn.running_mean = torch.zeros(8)[::2]
    assert [(r.name, r.kind) for r in audit(bn)] == [("running_mean", "buffer")]
    with pytest.raises(TypeError, match="nn.Module or a torch.optim.Optimizer"):
        audit(torch.zeros(3))


# --- the paper's experiments --------------------------------------------------------------------


def test_reverse_first_reverses_only_the_first_k_dimensions():
    assert reverse_first(2) == (1, 0, 2, 3, 4, 5)
    assert reverse_first(6) == (5, 4, 3, 2, 1, 0)


def test_swapping_the_size_one_dimension_keeps_the_tensor_contiguous():
    x = torch.zeros(1, 3, 3, 3, 3, 3)
    assert x.permute(reverse_first(2)).is_contiguous()
    assert not any(x.permute(reverse_first(k)).is_contiguous() for k in range(3, 7))


def test_rises_accepts_a_rising_curve_and_rejects_a_flat_or_falling_one():
    assert rises([1, 2, 2.5, 8])
    assert rises([1, 3, 2.5, 8])  # a small dip is within the slack
    assert not rises([1, 3, 1, 8])
    assert not rises([1, 1.1, 1.2, 1.3])


def test_one_thread_restores_the_thread_count():
    before = torch.get_num_threads()
    with one_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_permute_copy_times_samples_every_k_the_same_number_of_times():
    # How the times compare (the curve rises; k = 6 is several times k = 3) is a measurement a
    # loaded machine can squeeze: lesson 05 prints it and tests/benchmarks/bench.py reports it.
    times = permute_copy_times(n=6, repeats=3, min_time=0.001)
    assert sorted(times) == [2, 3, 4, 5, 6] and all(len(v) == 3 for v in times.values())
    assert all(t > 0 for v in times.values() for t in v)


def test_permute_copy_times_also_times_the_extra_permutations_it_is_given():
    times = permute_copy_times(n=6, ks=(2, 3), repeats=2, min_time=0.001,
                               extra={"2, two size-6 dims": (0, 2, 1, 3, 4, 5)})
    assert list(times) == [2, 3, "2, two size-6 dims"] and all(len(v) == 2 for v in times.values())


def test_both_augmentation_pipelines_give_the_same_images():
    images = synthetic_images(16)
    aware, default = augment(images, aware=True), augment(images, aware=False)
    assert aware.shape == (16, 1, 24, 24) and aware.is_contiguous()
    assert torch.equal(aware, default)
    assert torch.equal(synthetic_images(4, seed=3), synthetic_images(4, seed=3))


def test_augment_times_interleaves_both_pipelines_and_times_every_pass():
    times = augment_times(synthetic_images(32), batch=8, repeats=2)
    assert set(times) == {"default", "aware"}
    assert all(len(v) == 2 and all(s > 0 for s in v) for v in times.values())


# --- lesson 05's exercise references agree with torch (the oracle) ------------------------------


@pytest.mark.parametrize("seed", range(40))
def test_contiguous_strides_match_a_new_tensor(seed):
    rng = random.Random(seed)
    shape = tuple(rng.choice((0, 1, 2, 3, 5)) for _ in range(rng.randint(0, 5)))
    assert contiguous_strides(shape) == torch.empty(shape).stride()


def _layouts(n):
    fixed = [(shape, strides) for _, shape, strides in LAYOUTS]
    drawn = [random_layout(random.Random(s), min_size=0)[:2] for s in range(n)]
    return fixed + drawn


@pytest.mark.parametrize("shape, strides", _layouts(60))
def test_is_contiguous_reference_agrees_with_torch(shape, strides):
    assert is_contiguous(shape, strides) == torch.empty_strided(shape, strides).is_contiguous()


@pytest.mark.parametrize("seed", range(40))
def test_storage_index_reference_finds_the_element(seed):
    case = bank.get("05.storage_index").random(random.Random(seed))
    index, shape, strides, offset = case.args
    base = torch.arange(1000)
    assert base[storage_index(*case.args)] == base.as_strided(shape, strides, offset)[index]


def _torch_says(shape, strides, op):
    t = torch.empty_strided(shape, strides)
    try:
        out = eval(op, {"t": t})  # noqa: S307 - ops are the bank's fixed strings
    except RuntimeError:
        return "error"
    return "view" if out.untyped_storage().data_ptr() == t.untyped_storage().data_ptr() else "copy"


def test_view_or_copy_reference_agrees_with_torch_on_fixed_and_random_cases():
    ex = bank.get("05.view_or_copy")
    for case in ex.cases(seed=7) + ex.cases(seed=8):
        assert view_or_copy(*case.args) == _torch_says(*case.args), case.label


def test_fix_layout_reference_keeps_the_same_parameter_objects():
    model = _tied_autoencoder()
    before = list(model.parameters())
    fix_layout(model)
    assert [p is q for p, q in zip(before, model.parameters(), strict=True)] == [True] * 4
    assert not audit(model)
