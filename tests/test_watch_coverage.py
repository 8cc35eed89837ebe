"""Which parameters train: in no optimizer, never a gradient, stale after a swap, frozen by a lost
update; and what is not a stray (a second optimizer that takes over, parts called one by one,
sparse gradients, earlier folds)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_utils.toolkit.emulate.inplace import mps_inplace_bug
from tests.watch_support import alarms, line_of, mlp, watched


def head_swap(late: bool):
    def train(steps):
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 5))
        if not late:
            model[2] = nn.Linear(8, 3)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        if late:
            model[2] = nn.Linear(8, 3)  # new head
        x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
        for _ in range(steps):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()

    return train


def test_a_head_attached_after_the_optimizer_is_not_in_it_and_the_old_one_is_stale():
    found = watched(head_swap(late=True), 6)
    assert {"not in optimizer", "stale optimizer"} <= alarms(found)
    assert found["not in optimizer"].where.line == line_of("new head")
    assert not alarms(watched(head_swap(late=False), 6))


def numpy_cut(cut: bool):
    def train(steps):
        enc, dec = nn.Linear(4, 8), nn.Linear(8, 1)
        opt = torch.optim.Adam([*enc.parameters(), *dec.parameters()], lr=1e-2)
        model = nn.Sequential(enc, dec)
        x, y = torch.randn(16, 4), torch.randn(16, 1)
        for _ in range(steps):
            h = enc(x)
            if cut:
                h = torch.from_numpy(h.detach().numpy() * 2)  # cut
            loss = F.mse_loss(dec(h), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        return model

    return train


def test_a_graph_cut_by_numpy_leaves_the_encoder_without_gradients_and_says_where():
    found = watched(numpy_cut(cut=True), 8)
    assert "no gradient" in found and str(line_of("cut")) in found["no gradient"].what
    assert not alarms(watched(numpy_cut(cut=False), 8))


def test_updates_lost_to_the_emulated_inplace_bug_are_frozen_and_non_contiguous():
    def train(steps):
        w = nn.Parameter(torch.randn(8, 6).t())  # non-contiguous, like a transposed tied weight
        opt = torch.optim.Adam([w], lr=1e-2)
        x = torch.randn(16, 6)
        for _ in range(steps):
            loss = (x @ w).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

    with mps_inplace_bug(device="cpu"):
        found = watched(train, 4)
    assert {"frozen", "non-contiguous"} <= alarms(found)
    assert "(emulated)" in found["non-contiguous"].what


def test_a_bias_feeding_batch_norm_is_information_not_an_alarm():
    def train(steps):
        model = mlp(norm=True)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x = torch.randn(64, 4)
        with torch.no_grad():
            model[0].bias.fill_(3.0)  # large |b|: lr x ~1e-9 gradient is far below its float spacing
        for _ in range(steps):
            loss = F.mse_loss(model(x).squeeze(1), x[:, 0])
            opt.zero_grad()
            loss.backward()
            opt.step()

    found = watched(train, 12)
    assert not alarms(found)
    if "below resolution" in found:
        assert "BatchNorm1d" in found["below resolution"].why


def two_phases(*, swap_head_after_optimizer=False, back_to_train=True):
    """Pretrain a model, then train a second model (or a new head) with a new optimizer."""

    def train(steps):
        x, y = torch.randn(64, 4), torch.randint(0, 3, (64,))
        first = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
        opt = torch.optim.Adam(first.parameters(), lr=1e-2)
        for _ in range(steps):
            opt.zero_grad()
            F.cross_entropy(first(x), y).backward()
            opt.step()
        second = nn.Sequential(nn.Linear(4, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 3))
        opt2 = torch.optim.SGD(second.parameters(), lr=1e-2)
        if swap_head_after_optimizer:
            second[3] = nn.Linear(16, 3)
        second.train()
        for i in range(steps):
            opt2.zero_grad()
            F.cross_entropy(second(x), y).backward()
            opt2.step()
            if i % 3 == 2:  # a look at held-out data, mid-epoch
                second.eval()
                with torch.no_grad():
                    second(x[:8])
                if back_to_train:
                    second.train()

    return train


def test_a_second_optimizer_that_takes_over_is_watched_like_the_first():
    found = alarms(watched(two_phases(swap_head_after_optimizer=True), 12, deep_every=None))
    assert {"not in optimizer", "stale optimizer"} <= found
    assert "eval mode" in alarms(watched(two_phases(back_to_train=False), 12, deep_every=None))
    assert not alarms(watched(two_phases(), 12, deep_every=None))


class Recommender(nn.Module):
    def __init__(self):
        super().__init__()
        self.users = nn.Embedding(50, 8, sparse=True)
        self.tower = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.out = nn.Linear(16, 1)

    def forward(self, u):
        return self.out(self.tower(self.users(u))).squeeze(-1)


@pytest.mark.parametrize("dense_from", ["model", "out"])
def test_sparse_gradients_count_and_a_tower_left_out_of_every_optimizer_is_named(dense_from):
    def train(steps):
        model = Recommender()
        sparse = torch.optim.SparseAdam(model.users.parameters(), lr=1e-2)
        dense_params = [p for n, p in model.named_parameters() if not n.startswith("users")]
        dense = torch.optim.Adam(dense_params if dense_from == "model" else model.out.parameters(), lr=1e-2)
        for _ in range(steps):
            u = torch.randint(0, 50, (32,))
            loss = F.binary_cross_entropy_with_logits(model(u), (u % 2).float())
            sparse.zero_grad()
            dense.zero_grad()
            loss.backward()
            sparse.step()
            dense.step()

    found = alarms(watched(train, 8, deep_every=None))
    assert found == (set() if dense_from == "model" else {"not in optimizer"})


def test_parameters_of_a_module_whose_parts_the_loop_calls_are_not_stale():
    class Tokens(nn.Module):
        def __init__(self):
            super().__init__()
            self.cls = nn.Parameter(torch.zeros(1, 4))
            self.body = nn.Linear(4, 4)
            self.head = nn.Linear(4, 1)

    def train(steps):
        model, x = Tokens(), torch.randn(16, 4)
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        for _ in range(steps):  # the loop calls the parts, never model(...)
            loss = model.head(model.body(x + model.cls)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

    assert not alarms(watched(train, 6, deep_every=None))


class ListOfLayers(nn.Module):
    def __init__(self, registered: bool):
        super().__init__()
        layers = [nn.Linear(8, 8) for _ in range(2)]
        self.layers = nn.ModuleList(layers) if registered else layers  # layers
        self.inp, self.out = nn.Linear(4, 8), nn.Linear(8, 1)

    def forward(self, x):
        h = self.inp(x)
        for layer in self.layers:
            h = torch.relu(layer(h))
        return self.out(h)


@pytest.mark.parametrize("registered", [False, True])
def test_layers_kept_in_a_plain_list_are_in_no_optimizer(registered):
    def train(steps):
        model, x = ListOfLayers(registered), torch.randn(16, 4)
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        for _ in range(steps):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()

    found = watched(train, 6, deep_every=None)
    if registered:
        assert not alarms(found)
    else:
        assert "not in optimizer" in alarms(found) and "plain list" in found["not in optimizer"].what


def test_the_models_of_earlier_folds_are_not_strays_of_the_current_one():
    def train(steps):
        x, y, kept = torch.randn(32, 4), torch.randn(32, 1), []
        for _ in range(3):  # each fold: a fresh model and optimizer; old models kept for an ensemble
            model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
            opt = torch.optim.SGD(model.parameters(), lr=1e-2)
            for _ in range(steps):
                opt.zero_grad()
                F.mse_loss(model(x), y).backward()
                opt.step()
            kept.append(model)

    from course_utils.toolkit.watch.cost_budget import Budget
    from tests.test_watch_budget import Ticks

    roomy = Budget(share=0.05, floor=100.0, clock=Ticks())  # the schedule, not the machine's speed
    assert not alarms(watched(train, 8, deep_every=None, cost=roomy))


def test_a_learning_rate_a_million_times_too_small_is_an_update_ratio():
    def train(steps, lr):
        model, x = mlp(), torch.randn(32, 4)
        opt = torch.optim.SGD(model.parameters(), lr=lr)
        for _ in range(steps):
            opt.zero_grad()
            F.mse_loss(model(x).squeeze(1), x.sum(1)).backward()
            opt.step()

    assert "update ratio" in alarms(watched(lambda s: train(s, 1e-8), 60, deep_every=None))
    assert not alarms(watched(lambda s: train(s, 1e-2), 60, deep_every=None))


def test_coverage_waits_for_a_step_seen_whole_and_a_swapped_head_is_no_stray():
    """Which modules a model calls is seen op by op: a verdict taken on an older step's view (the
    budget spent, no window since the head was swapped) would call the old head a stray."""
    import math

    from course_utils.toolkit.watch import watch
    from course_utils.toolkit.watch.cost_budget import Budget
    from tests.test_watch_budget import Ticks

    torch.manual_seed(0)
    x, y5, y3 = torch.randn(32, 4), torch.randint(0, 5, (32,)), torch.randint(0, 3, (32,))
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 5))
    with watch(verbose=False, cost=Budget(share=0.05, floor=100.0, clock=Ticks())) as w:
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(4):  # pretraining, watched op by op
            opt.zero_grad()
            F.cross_entropy(model(x), y5).backward()
            opt.step()
        w.cost.spent = math.inf  # from here on the budget has no room
        model[2] = nn.Linear(16, 3)  # the new head, and an optimizer for it alone
        model[0].requires_grad_(False)
        head_opt = torch.optim.SGD(model[2].parameters(), lr=0.1)
        for _ in range(8):
            head_opt.zero_grad()
            F.cross_entropy(model(x), y3).backward()
            head_opt.step()
    assert w._coverage_due and w.deep_steps >= 3  # due, and never judged on a partial view
    assert not [f for f in w.findings if f.alarm]


@pytest.mark.parametrize("late", [True, False])
def test_a_run_with_no_step_seen_whole_is_judged_at_its_end_on_its_models_parameters(late):
    """The budget cuts every window: no step is seen op by op from start to end, and at the end of
    the run the models' own parameters are still checked against the optimizers'."""
    from course_utils.toolkit.watch import watch
    from course_utils.toolkit.watch.cost_budget import Budget
    from tests.test_watch_budget import Ticks

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))  # alive at the end, as a script's
    x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
    with watch(verbose=False, cost=Budget(share=0.0, floor=0.0005, clock=Ticks(per_read=1e-3))) as w:
        opt = torch.optim.SGD(model[0].parameters() if late else model.parameters(), lr=0.1)
        for _ in range(8):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
    assert w.cost.cuts and not w._coverage_judged and w.models.live_roots() == [model]
    assert ("not in optimizer" in alarms({f.kind: f for f in w.findings})) == late


def test_an_optimizer_built_where_a_dropped_one_lived_gets_checks_of_its_own():
    """Python gives a freed object's id to the next one: a fine-tuning optimizer built after the
    pretraining one was let go may carry its id, and must not be taken for it (the new head would
    look held by no optimizer)."""
    import gc

    from course_utils.toolkit.watch import watch

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 5))
    x, y5, y3 = torch.randn(32, 4), torch.randint(0, 5, (32,)), torch.randint(0, 3, (32,))
    with watch(verbose=False, deep_every=1) as w:
        pretrain = torch.optim.Adam(model.parameters(), lr=1e-3)
        for _ in range(4):
            pretrain.zero_grad()
            F.cross_entropy(model(x), y5).backward()
            pretrain.step()
        freed = id(pretrain)
        del pretrain
        gc.collect()
        model[2] = nn.Linear(16, 3)
        finetune = torch.optim.SGD(model.parameters(), lr=0.1)
        w.optimizers[id(finetune)] = w.optimizers.pop(freed)  # the allocator reused the address
        for _ in range(8):
            finetune.zero_grad()
            F.cross_entropy(model(x), y3).backward()
            finetune.step()
        assert w.optimizers[id(finetune)].ref() is finetune
    assert "not in optimizer" not in alarms({f.kind: f for f in w.findings})
