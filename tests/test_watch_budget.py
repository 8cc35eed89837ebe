"""``course watch`` keeps its own cost under a share of the run: windows open only when the budget has
room, a window that outgrows it is cut at a safe point (also inside an LBFGS closure), check steps
wait while it is spent, and none of it changes the script's numbers. The clock here is a counter the
tests drive (the budget's clock is injectable), so nothing depends on the machine's speed."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from course_utils.toolkit.watch import watch
from course_utils.toolkit.watch.cost_budget import Budget


class Ticks:
    """A clock that moves ``per_read`` seconds each time it is read, or as the test sets it."""

    def __init__(self, per_read: float = 0.0):
        self.now, self.per_read = 0.0, per_read

    def __call__(self) -> float:
        self.now += self.per_read
        return self.now


def test_the_allowance_grows_with_the_run_and_a_cut_window_asks_for_twice_its_room():
    clock = Ticks()
    budget = Budget(share=0.05, floor=0.3, clock=clock, checks_floor=0.1)
    assert budget.left(windows=True) == 0.3 and budget.left() == 0.4 and budget.may_open()
    clock.now = 10.0
    assert math.isclose(budget.left(), 0.9)
    budget.charge(0.7, window=True)  # cut
    assert budget.cuts == 1 and budget.need == 1.4 and not budget.may_open()
    clock.now = 40.0  # windows: 0.3 + 0.04 * 40 - 0.7 = 1.2 left, short of 1.4
    assert math.isclose(budget.left(windows=True), 1.2) and not budget.may_open()
    clock.now = 50.0  # 0.3 + 2.0 - 0.7 = 1.6 left >= 1.4
    assert budget.may_open()
    budget.charge(0.5, window=True, complete=True)
    assert budget.need == 0.0 and list(budget.windows) == [0.5]
    assert budget.deadline(40.0) > 40.0
    assert Budget(share=math.inf).left() == math.inf


def test_cuts_in_a_row_back_off_exponentially_and_a_complete_window_resets_the_back_off():
    """A window that keeps outgrowing the budget (a whole-episode rollout) asks room for 2, 4, 8 times
    its cost after one, two, three cuts in a row, so it is tried a few times a run; a window that
    completes starts the count again."""
    clock = Ticks()
    budget = Budget(share=0.05, floor=0.3, clock=clock)
    for cuts, factor in ((1, 2), (2, 4), (3, 8)):
        budget.charge(0.1, window=True)
        assert budget.cuts_in_row == cuts and budget.need == pytest.approx(factor * 0.1)
    assert not budget.may_open()
    clock.now = 25.0  # windows: 0.3 + 0.04 * 25 - 0.3 = 1.0 left, more than the 0.8 needed
    assert budget.may_open()
    budget.charge(0.2, window=True, complete=True)
    assert budget.cuts_in_row == 0 and budget.need == 0.0
    budget.charge(0.1, window=True)
    assert budget.need == pytest.approx(0.2) and budget.cuts == 4


def _loop(model, opt, x, y, steps):
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(x).squeeze(-1) - y) ** 2).mean()
        loss.backward()
        opt.step()


def _sequence_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))


def test_a_window_over_budget_is_cut_and_the_weights_are_those_of_the_plain_run():
    x, y = torch.randn(64, 4), torch.randn(64)
    plain = _sequence_model()
    _loop(plain, torch.optim.SGD(plain.parameters(), lr=0.05), x, y, 30)

    model = _sequence_model()
    with watch(verbose=False, cost=Budget(share=0.05, floor=0.0, clock=Ticks(per_read=0.01))) as w:
        _loop(model, torch.optim.SGD(model.parameters(), lr=0.05), x, y, 30)
    assert w.cost.cuts >= 1  # the window open at the start outgrew an empty budget
    assert not w.ops.open and not w.findings
    for a, b in zip(plain.parameters(), model.parameters(), strict=True):
        assert torch.equal(a, b)


def test_with_no_room_no_later_window_opens_and_checks_stop_after_the_first_step():
    x, y = torch.randn(64, 4), torch.randn(64)
    model = _sequence_model()
    spent = Budget(share=0.0, floor=0.0, clock=Ticks())
    spent.spent = 1.0  # spent before the loop starts
    with watch(verbose=False, cost=spent) as w:
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        _loop(model, opt, x, y, 20)
        ow = w.optimizers[id(opt)]
        checked = [w._is_check(ow)]
    assert w.deep_steps == 1  # only the window of the set-up
    assert checked == [False]  # step 21 would be a warm-up check


def test_windows_leave_the_check_steps_their_part_of_the_budget():
    """Spent past what windows may use but not past the whole share: check steps go on, no window
    opens (without the part kept for them, windows would open again from step 31 and could spend
    what the next check step needs)."""
    x, y = torch.randn(64, 4), torch.randn(64)
    model = _sequence_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    clock = Ticks()
    budget = Budget(share=0.05, floor=0.0, clock=clock)
    budget.spent = 1.5  # windows may spend again from 1.5 / 0.04 = 37.5 s, check steps from 30 s
    checked, windows = [], []
    with watch(verbose=False, cost=budget) as w:
        decide = w._is_check

        def spy(ow):
            due = decide(ow)
            if due and ow.steps + 1 not in checked:
                checked.append(ow.steps + 1)
            return due

        w._is_check = spy
        for step in range(1, 37):
            clock.now = float(step)
            before = w.deep_steps
            _loop(model, opt, x, y, 1)
            windows += [step] * (w.deep_steps - before)
    assert 32 in checked and 16 not in checked  # 0.05 * 32 > 1.5 > 0.05 * 16
    assert [s for s in windows if s > 1] == []  # 0.04 * 36 < 1.5: no window after the set-up's


def test_check_steps_keep_a_start_allowance_that_the_first_windows_cannot_spend():
    """A short run on a slow machine: the first windows use all of the start allowance before the
    run's share has grown; check steps go on with their own part of it, windows wait."""
    x, y = torch.randn(64, 4), torch.randn(64)
    model = _sequence_model()
    clock = Ticks()
    budget = Budget(share=0.05, floor=0.3, clock=clock, checks_floor=0.1)
    budget.charge(0.4, window=True, complete=True)  # the first windows, past the start allowance
    with watch(verbose=False, cost=budget) as w:
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        for step in range(1, 16):
            clock.now = 0.1 * step  # at 1.5 s: 0.3 + 0.06 < 0.4 spent, 0.4 + 0.075 > 0.4
            _loop(model, opt, x, y, 1)
        ow = w.optimizers[id(opt)]
        assert w.deep_steps <= 1 and budget.left(windows=True) < 0 < budget.left()
        assert w._is_check(ow)  # step 16: a check step, on the allowance kept for it


def test_with_room_the_schedule_is_the_sampled_one():
    x, y = torch.randn(64, 4), torch.randn(64)
    model = _sequence_model()
    with watch(verbose=False, cost=Budget(share=0.05, floor=100.0, clock=Ticks())) as w:
        _loop(model, torch.optim.SGD(model.parameters(), lr=0.05), x, y, 20)
    assert w.cost.cuts == 0 and w.deep_steps >= 3  # set-up, steps 2 and 3 (and later ones)
    assert len(w.cost.windows) >= 2


def test_a_window_cut_inside_an_lbfgs_closure_ends_with_the_closure():
    torch.manual_seed(0)
    cell = nn.LSTMCell(1, 8)
    head = nn.Linear(8, 1)
    model = nn.ModuleList([cell, head])
    seq = torch.randn(4, 50, 1)
    opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=5)
    after_closures = []

    def closure():
        opt.zero_grad()
        h = c = torch.zeros(4, 8)
        outs = []
        for x_t in seq.unbind(1):  # a long sequence: many ops per forward
            h, c = cell(x_t, (h, c))
            outs.append(head(h))
        loss = (torch.cat(outs, 1) ** 2).mean()
        loss.backward()
        return loss

    with watch(verbose=False, cost=Budget(share=0.05, floor=0.0, clock=Ticks(per_read=0.01))) as w:
        for _ in range(3):
            opt.step(closure)
            after_closures.append(w.ops.open)
    assert w.cost.cuts >= 1 and after_closures == [False, False, False]
    assert not w.findings


def test_a_long_set_up_is_watched_in_part_and_the_first_step_still_op_by_op():
    from course_utils.toolkit.watch.ops import SETUP_CALLS

    torch.manual_seed(0)
    with watch(verbose=False) as w:
        rows = [torch.tensor([float(i % 7), 1.0]) for i in range(SETUP_CALLS + 200)]  # a tokenizer's loop
        parked = (w.ops.parked, w.ops.suspended, w.ops._on_top())  # left at the next Python call
        x = torch.stack(rows)
        y = x.sum(1)
        model = nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for _ in range(2):
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()  # (B, 1) against (B,): seen op by op only
            opt.step()
    assert parked == (True, True, False)
    assert "broadcast" in {f.kind for f in w.findings if f.step == 1}


def watch_script(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    """``course watch --quiet train.py`` in a fresh process, on a script with ``source``."""
    script = tmp_path / "train.py"
    script.write_text(source, encoding="utf-8")
    cmd = [sys.executable, "-m", "course_utils.toolkit.watch", "--quiet", str(script)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1],
                          timeout=300)


def test_a_short_watched_run_does_not_load_torch_dynamo(tmp_path):
    """The first call of a dispatch mode's handler imports torch._dynamo (a second of CPU); a script
    that loads none of it (a hand-written update: torch.optim's optimizers load it) must not pay
    for it under watch."""
    done = watch_script(tmp_path, (
        "import sys\nimport torch\nmodel = torch.nn.Linear(2, 1)\nx = torch.randn(8, 2)\n"
        "for _ in range(4):\n    model.zero_grad()\n    model(x).pow(2).mean().backward()\n"
        "    for p in model.parameters():\n        p.data.add_(-0.1 * p.grad)\n"
        "print('dynamo', 'torch._dynamo' in sys.modules)\n"))
    assert done.returncode == 0 and done.stdout == "dynamo False\n"
    assert "4 backward passes, 1 watched op by op" in done.stderr


def test_a_window_cut_in_a_long_run_of_torch_calls_leaves_its_modes_before_the_next_module_call():
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    x = torch.randn(8, 4)
    with watch(verbose=False, cost=Budget(share=0.0, floor=0.0, clock=Ticks(per_read=0.01))) as w:
        y = model(x)  # the model is found: the window's deadline is now, as the budget is empty
        for _ in range(300):  # no module call, no step: nothing but torch calls
            y = y * 1.0
        left_at_once = not w.ops.open
        y.pow(2).mean().backward()
    assert left_at_once and w.cost.cuts == 1 and not w.findings


@pytest.mark.parametrize("first", ["", "import torch._dynamo\n"], ids=["dynamo unloaded", "dynamo loaded"])
def test_a_model_compiled_inside_a_window_trains_under_watch(tmp_path, first):
    """Compiled code never runs under the window's dispatch mode (torch 2.14's compiled backward
    fails under one): the window open when ``torch.compile`` is called is left and no window opens
    after it, whichever mode it had (a fresh process: torch._dynamo loaded or not)."""
    done = watch_script(tmp_path, (
        "import torch\n" + first + "from torch import nn\n"
        "model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))\n"
        "fast = torch.compile(model, backend='eager')\nx, y = torch.randn(16, 4), torch.randn(16, 1)\n"
        "for _ in range(20):\n    model.zero_grad()\n    ((fast(x) - y) ** 2).mean().backward()\n"
        "    with torch.no_grad():\n        for p in model.parameters():\n            p -= 0.05 * p.grad\n"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "20 backward passes" in done.stderr and "internal error" not in done.stderr
    assert "1 watched op by op" in done.stderr  # only the set-up's window: none over compiled code


class _Token:
    """An object only an autograd node holds (weakly referable, unlike the node itself)."""


class _HoldToken(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, token):
        ctx.token = token  # lives as long as this node of the graph
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def test_the_watcher_keeps_no_graph_alive_past_the_scripts_last_reference():
    """Outside op-by-op windows (which hold the nodes of the values they see read, until they
    close), a graph kept alive after backward slows the next backward (a 1,000-step LSTM: ~10%)."""
    import gc
    import weakref

    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(8, 4)
    alive = []
    spent = Budget(share=0.0, floor=0.0, clock=Ticks())
    spent.spent = 1.0  # no room: no window after the set-up's
    with watch(verbose=False, cost=spent) as w:
        for _ in range(4):
            token = _Token()
            alive.append(weakref.ref(token))
            opt.zero_grad()
            loss = _HoldToken.apply(model(x), token).pow(2).mean()
            loss.backward()
            opt.step()
            del loss, token
            gc.collect()
            assert alive[-1]() is None
    assert w.step == 4 and w.backwards == 4


def test_after_a_cut_the_search_for_models_stops_once_the_budget_is_spent():
    """Global module hooks put every module call on torch's slow path: after a window cut for its
    cost they stay only while the budget has room (60,000 module calls in one LBFGS step)."""
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(4, 4) for _ in range(6)])
    x = torch.randn(8, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with watch(verbose=False, cost=Budget(share=0.0, floor=0.0, clock=Ticks(per_read=0.01))) as w:
        opt.zero_grad()
        model(x).pow(2).mean().backward()  # the first window: cut, as the budget is empty
        searching = bool(w._discovery)
        for _ in range(3):
            model(x)  # still inside step 1
        searched_after = bool(w._discovery)
        opt.step()
    assert w.cost.cuts >= 1 and w.models.roots
    assert not searched_after, searching



def test_a_cut_window_of_a_step_with_many_forwards_waits_for_room_for_twice_what_it_used():
    """A rollout: forty forwards, then one backward and step. A window opened at a step boundary
    spans a whole step, so one cut halfway through its forwards waits for room for twice its cost,
    not for twice its cost per forward (which opens the next window too early, to be cut again)."""
    torch.manual_seed(0)
    policy = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
    opt = torch.optim.SGD(policy.parameters(), lr=0.01)
    budget = Budget(share=0.05, floor=100.0, clock=Ticks(per_read=0.001))
    cuts, charge = [], budget.charge

    def spy(seconds, window=False, complete=False, passes=1):
        charge(seconds, window=window, complete=complete, passes=passes)
        if window and not complete:
            cuts.append((seconds, budget.need))

    budget.charge = spy
    with watch(verbose=False, cost=budget) as w:
        for step in range(4):
            logps = []
            for i in range(40):
                if step == 2 and i == 20:
                    assert w.ops.open  # step 3 is watched op by op: its window opened at step 2's end
                    w.ops.cut = True  # as the deadline does: the window has outgrown its budget
                logps.append(policy(torch.randn(1, 4)).log_softmax(-1)[0, 0])
            opt.zero_grad()
            (-torch.stack(logps).sum()).backward()
            opt.step()
    assert len(cuts) == 1 and cuts[0][1] == pytest.approx(2 * cuts[0][0]), cuts


def test_a_window_needs_room_for_the_last_plain_steps_length_at_the_windows_cost_per_second():
    budget = Budget(share=0.05, floor=0.3, clock=lambda: 0.0)
    budget.rate(0.02, 0.01)  # a window twice as long as the plain step before it
    budget.rate(0.03, 0.01)
    budget.rate(0.02, 0.01)
    assert budget.may_open(0.1)  # room 0.3 for an expected 0.2
    assert not budget.may_open(0.2)  # an episode twice as long: 0.4 expected
    assert budget.may_open()  # no step known: the recent complete windows alone


def test_a_rollout_whose_episodes_grow_opens_no_window_it_cannot_finish():
    """Episodes of ten actions, then of three hundred (a policy that learned to balance): a window
    sized on the short ones would be cut halfway and its cost wasted. The window over a step is
    sized on the last plain steps' length, so once the long episodes are the last plain steps, none
    opens that the budget cannot finish (the one over the first long episode cannot know)."""
    clock = Ticks(per_read=0.0002)  # the watcher's reads; the script's own time is added below
    policy = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
    opt = torch.optim.SGD(policy.parameters(), lr=0.01)
    budget = Budget(share=0.05, floor=0.2, clock=clock)
    windows, charge = [], budget.charge
    episodes = [10] * 20 + [300] * 40

    def spy(seconds, window=False, complete=False, passes=1):
        charge(seconds, window=window, complete=complete, passes=passes)
        if window:
            windows.append((w.step, complete))

    budget.charge = spy
    torch.manual_seed(0)
    with watch(verbose=False, cost=budget) as w:
        for actions in episodes:
            logps = []
            for _ in range(actions):
                clock.now += 0.001  # the script's own time per action
                logps.append(policy(torch.randn(1, 4)).log_softmax(-1)[0, 0])
            opt.zero_grad()
            (-torch.stack(logps).sum()).backward()
            opt.step()
    sized_on_long = [complete for step, complete in windows if step > episodes.index(300) + 3]
    assert sum(complete for _, complete in windows) >= 2 and all(sized_on_long), windows


def test_a_window_is_charged_the_watchers_time_not_the_scripts_own_kernels():
    """A step of large ops costs the script as much watched or not: a window over it is charged
    only what the watcher adds, so a one-second kernel leaves a window of 0.3 s of room complete."""
    clock = Ticks(per_read=0.0001)

    @torch.library.custom_op("mpsd_budget_test::slow_kernel", mutates_args=())
    def slow_kernel(x: torch.Tensor) -> torch.Tensor:
        clock.now += 1.0  # the script's own kernel: a second of work
        return x.clone()

    slow_kernel.register_autograd(lambda ctx, grad: grad)
    model = nn.Linear(8, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    budget = Budget(share=0.05, floor=0.3, clock=clock)
    windows, charge = [], budget.charge

    def spy(seconds, window=False, complete=False, passes=1):
        charge(seconds, window=window, complete=complete, passes=passes)
        if window:
            windows.append((complete, seconds))

    budget.charge = spy
    with watch(verbose=False, cost=budget):
        for _ in range(3):
            opt.zero_grad()
            slow_kernel(model(torch.randn(4, 8))).pow(2).mean().backward()
            opt.step()
    assert len(windows) == 3 and all(complete and seconds < 0.3 for complete, seconds in windows), windows


def test_remembering_the_device_side_storages_of_a_long_step_stays_linear(monkeypatch):
    """A step that keeps thousands of tensors alive (a rollout's graph, a long sequence): the map of
    device-side storages is pruned of dead ones at twice what outlived the last pruning, so marking
    n live tensors checks O(n) references, not O(n) at every mark past the limit."""
    from course_utils.toolkit.watch import ops as ops_module

    checks = []
    original = ops_module.StorageWeakRef.expired
    monkeypatch.setattr(ops_module.StorageWeakRef, "expired", lambda ref: checks.append(1) or original(ref))
    monkeypatch.setattr(ops_module, "PRUNE_AT", 64)
    with watch(verbose=False) as w:
        opwatch = ops_module.OpWatch(w)
    alive = [torch.zeros(1) for _ in range(2000)]
    for t in alive:
        opwatch.mark([t])
    assert len(opwatch._storages) == 2000
    assert len(checks) < 4 * len(alive), len(checks)
