"""Does the fallback emulation behave like MPS, and does trace() count what it should (lesson 04)?"""

import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from course_utils.toolkit.emulate.mps_fallback import (
    ALWAYS_FALLBACK,
    EmulatedFallbackWarning,
    EmulatedNotImplementedError,
    emulate_fallback,
    op_matches,
    reset_warn_once,
    what_is_emulated,
)
from course_utils.toolkit.optrace import count_switches, has_kernel, has_mps_kernel, trace

CPU = torch.device("cpu")


@pytest.fixture(autouse=True)
def fresh_warn_scope():
    reset_warn_once()
    yield
    torch.set_warn_always(False)


def fallback_messages(fn, *args, **emulation):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with emulate_fallback(device=CPU, **emulation) as emu:
            fn(*args)
    return [str(w.message) for w in caught if issubclass(w.category, EmulatedFallbackWarning)], emu


def cumsum_three_times(x):
    for _ in range(3):
        x.cumsum(0)


def test_does_the_warning_have_the_mps_text_and_say_it_is_emulated():
    messages, _ = fallback_messages(cumsum_three_times, torch.ones(4), unsupported={"aten::cumsum"})
    assert messages == ["The operator 'aten::cumsum' is not currently supported on the MPS backend and "
                        "will fall back to run on the CPU. This may have performance implications. "
                        "[emulated]"]
    assert issubclass(EmulatedFallbackWarning, UserWarning)


def test_is_the_warning_given_once_per_scope_until_reset():
    first, _ = fallback_messages(cumsum_three_times, torch.ones(4), unsupported={"aten::cumsum"})
    again, emu = fallback_messages(cumsum_three_times, torch.ones(4), unsupported={"aten::cumsum"})
    assert len(first) == 1 and again == [] and emu.fallbacks == ["aten::cumsum"] * 3
    reset_warn_once()
    assert len(fallback_messages(cumsum_three_times, torch.ones(4), unsupported={"aten::cumsum"})[0]) == 1


def test_does_set_warn_always_show_every_fallback():
    torch.set_warn_always(True)
    messages, _ = fallback_messages(cumsum_three_times, torch.ones(4), unsupported={"aten::cumsum"})
    assert len(messages) == 3


def test_does_an_unsupported_op_raise_without_the_fallback_variable():
    x = torch.ones(3)  # made before the emulation: on the emulated device
    with emulate_fallback({"aten::cumsum"}, enable_fallback=False, device=CPU):
        with pytest.raises(NotImplementedError) as info:
            x.cumsum(0)
    assert isinstance(info.value, EmulatedNotImplementedError)
    text = str(info.value)
    assert "'aten::cumsum' is not currently implemented for the MPS device" in text
    assert "PYTORCH_ENABLE_MPS_FALLBACK=1" in text and text.endswith("[emulated]")
    # torch 2.13's MPSFallback.mm wording: #141287, the use case, the build's commit hash
    assert "comment on https://github.com/pytorch/pytorch/issues/141287 and mention use-case" in text
    assert f"commit hash {torch.version.git_version}." in text
    assert "prototype phase" not in text and "77764" not in text


def test_do_the_always_fallback_ops_fall_back_even_without_the_variable():
    emb = nn.Embedding(10, 4, max_norm=1.0)
    messages, emu = fallback_messages(emb, torch.tensor([1, 2]), enable_fallback=False)
    assert emu.fallbacks == ["aten::embedding_renorm_"] and len(messages) == 1
    assert "aten::linalg_svd" in ALWAYS_FALLBACK


def test_is_unmodified_module_code_affected_and_its_result_unchanged():
    torch.manual_seed(0)
    native, emulated = nn.Embedding(50, 8, max_norm=1.0), nn.Embedding(50, 8, max_norm=1.0)
    emulated.load_state_dict(native.state_dict())
    ids = torch.tensor([[1, 2, 2], [7, 1, 9]])
    expected = native(ids)
    with emulate_fallback(device=CPU) as emu, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = emulated(ids)
    assert emu.fallbacks == ["aten::embedding_renorm_"]
    assert torch.equal(got, expected)
    assert torch.equal(emulated.weight, native.weight), "the in-place renorm must land in the weight"


class Seen(TorchDispatchMode):
    """Entered before the emulation, so it sees the emulation's own work."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.calls.append((func.name(), args[0].data_ptr() if args else None, out))
        return out


def test_does_the_fallback_really_copy_to_a_separate_buffer_and_back():
    x = torch.arange(6.0)
    with Seen() as seen, emulate_fallback({"aten::cumsum"}, device=CPU), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = x.cumsum(0)
    names = [name for name, _, _ in seen.calls]
    assert names == ["aten::clone", "aten::cumsum", "aten::clone"]
    assert seen.calls[1][1] != x.data_ptr(), "the op must run on a host copy, not the original"
    assert y.data_ptr() != seen.calls[1][2].data_ptr(), "the result is copied back to a new buffer"
    assert torch.equal(y, torch.arange(6.0).cumsum(0))


def test_do_cpu_and_to_device_move_tensors_between_host_and_emulated_device():
    with emulate_fallback(device=CPU) as emu:
        made_on_host, made_on_device = torch.zeros(3), torch.zeros(3, device=CPU)
        x = torch.ones(3)
        up = x.to(CPU)
        down = up.cpu()
        assert [emu.side(t) for t in (made_on_host, made_on_device, x, up, down, down + 1)] == [
            "host", "device", "host", "device", "host", "host"]
        assert up.data_ptr() != x.data_ptr() and down.data_ptr() != up.data_ptr()


def test_does_the_description_say_what_is_emulated_on_each_kind_of_device():
    assert "the device itself" in what_is_emulated("cpu") and "not emulated" in what_is_emulated("cpu")
    assert "emulated on this mps device" in what_is_emulated("mps")


def test_is_a_second_emulation_inside_the_first_refused():
    with emulate_fallback(device=CPU), pytest.raises(RuntimeError, match="already active"):
        with emulate_fallback(device=CPU):
            pass


def test_does_op_matching_treat_a_bare_name_as_all_overloads():
    assert op_matches("aten::cumsum.out", {"aten::cumsum"})
    assert not op_matches("aten::cumsum.out", {"aten::cumsum.dimname"})
    assert not op_matches("aten::cumsum_", {"aten::cumsum"})


def test_does_count_switches_count_changes_between_neighbours():
    assert count_switches(["cpu", "mps", "cpu", "mps", "cpu"]) == 4
    assert count_switches(["mps", "cpu", "cpu", "mps"]) == 2
    assert count_switches([]) == 0 and count_switches([None, "mps", "mps"]) == 0


def test_does_the_registry_know_kernels_and_composites():
    assert has_kernel("aten::add.Tensor", "CPU") and not has_kernel("aten::add.Tensor", "MPS")
    assert has_kernel("aten::_to_copy", "MPS"), "a composite kernel serves every backend"
    assert not has_kernel("aten::no_such_op", "CPU")


def test_has_mps_kernel_is_none_without_mps_and_no_for_an_op_registered_as_the_fallback(monkeypatch):
    monkeypatch.setattr(torch.backends.mps, "is_built", lambda: False)
    assert has_mps_kernel("aten::add.Tensor") is None
    monkeypatch.setattr(torch.backends.mps, "is_built", lambda: True)  # as on any Mac build
    assert has_mps_kernel("aten::embedding_renorm_") is False  # its MPS entry *is* the fallback
    assert has_mps_kernel("aten::_to_copy") is True  # a composite kernel serves MPS too


def five_stage_step(token_ids, head):
    batch = torch.tensor(token_ids)  # host batch
    h = batch.to(CPU).float().unsqueeze(-1)  # -> device (emulated), mps forward
    h = torch.cumsum(h, dim=1)  # fallback op
    logits = head(h)  # mps classifier
    return logits.argmax(-1).tolist()  # host log


def test_does_the_trace_count_four_switches_on_the_seed_path():
    head = nn.Linear(1, 3)
    with emulate_fallback({"aten::cumsum"}, device=CPU), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = trace(five_stage_step, [[1, 2, 3], [4, 5, 6]], head)
    assert t.switches == 4 and t.fallbacks == ["aten::cumsum"]
    assert [e.kind for e in t.events].count("copy") == 2  # the upload and the .tolist() read
    assert t.copies == 4  # upload, fallback down and up, read
    assert t.places[0] == "cpu" and t.events[1].runs_on == "mps"


def test_does_a_fallback_in_a_forward_cost_two_switches_and_the_copies_cpu_fallback_makes():
    emb = nn.Embedding(1000, 16, max_norm=1.0)
    ids = torch.randint(0, 1000, (4, 8))
    with emulate_fallback(device=CPU), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = trace(emb, ids)
    (event,) = [e for e in t.events if e.kind == "fallback"]
    assert event.op == "aten::embedding_renorm_" and event.kernel is False and event.runs_on == "cpu"
    assert t.start == "mps" and t.switches == 2
    assert event.copies == 3 and event.nbytes == 2 * emb.weight.nbytes + ids.nbytes


def test_does_a_rewrite_with_supported_ops_trace_with_no_switch():
    emb = nn.Embedding(1000, 16)
    ids = torch.randint(0, 1000, (4, 8))

    def rewritten(ids):
        with torch.no_grad():
            rows = ids.unique()
            picked = emb.weight.index_select(0, rows)
            norms = picked.norm(dim=1, keepdim=True)
            emb.weight.index_copy_(0, rows, picked * (1.0 / norms.clamp(min=1.0)))
        return F.embedding(ids, emb.weight)

    with emulate_fallback(device=CPU):
        t = trace(rewritten, ids)
    assert t.switches == 0 and t.copies == 0 and t.fallbacks == []
    assert set(t.places) == {"mps"}


def test_does_a_trace_without_emulation_on_a_cpu_only_machine_put_everything_on_the_host():
    if torch.accelerator.is_available() or torch.backends.mps.is_available():
        pytest.skip("this machine has an accelerator")
    t = trace(lambda x: (x + 1).sum(), torch.ones(3))
    assert set(t.places) == {"cpu"} and t.switches == 0 and t.fallbacks == []


def test_is_a_tensor_made_inside_the_emulation_without_device_on_the_host_as_on_a_mac():
    with emulate_fallback({"aten::cumsum"}, device=CPU) as emu:
        t = trace(lambda x: x.cumsum(0), torch.ones(3))
    assert t.start == "cpu" and t.fallbacks == [] and emu.fallbacks == []


def test_does_the_table_mark_the_fallback_and_the_switches():
    with emulate_fallback({"aten::cumsum"}, device=CPU), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = trace(lambda x: x.cumsum(0) + 1, torch.ones(3, device=CPU))
    text, html = t.table(), t._repr_html_()
    assert "2 backend switches" in text and "aten::cumsum" in text and "⇄ fallback: 2 copies" in text
    assert "<table>" in html and "#fdd" in html and repr(t) == text


@pytest.mark.slow
def test_does_the_timeline_draw_one_small_figure():
    import matplotlib

    matplotlib.use("Agg", force=True)
    with emulate_fallback({"aten::cumsum"}, device=CPU), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fig = trace(lambda x: x.cumsum(0) * 2, torch.ones(3, device=CPU)).timeline()
    assert len(fig.axes) == 1 and fig.get_size_inches()[0] <= 6


# How much slower the fallback model runs than the rewrite is a measurement that a loaded machine
# can squeeze: lesson 04 prints it and tests/benchmarks/bench.py reports it. The tests above check
# what makes it slower: the fallback's switches and copies, none for the rewrite.
