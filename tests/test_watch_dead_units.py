"""``course watch`` names a ReLU layer whose units are dead (0 for every row of the batch) in two
sampled steps, at the line that made the layer, once a run; live layers, a ReLU on a hand-written
hinge, and batches too small to say anything about a unit are quiet."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.watch_support import alarms, line_of, watched


def regression(init_positive: bool, rows: int = 64):
    """All-negative features; the hidden weights started all positive (every unit dead), or left at
    PyTorch's default initialisation."""
    def train(steps):
        x = -torch.rand(512, 8) * 3
        y = x[:, :2].sum(1, keepdim=True)
        layers = [nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1)]
        model = nn.Sequential(*layers)  # model
        if init_positive:
            with torch.no_grad():
                for layer in (model[0], model[2]):
                    layer.weight.uniform_(0.0, 0.1)
                    layer.bias.zero_()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        for step in range(steps):
            batch = slice(step * rows % 512, step * rows % 512 + rows)
            loss = F.mse_loss(model(x[batch]), y[batch])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return train


def test_a_layer_dead_for_every_row_in_two_steps_is_named_at_the_line_that_made_it():
    found = watched(regression(True), 6)
    assert "dead units" in alarms(found), found
    finding = found["dead units"]
    assert finding.where.line == line_of("model")
    assert "32 of the 32 units of the ReLU after `0` (Linear)" in finding.what, finding.what
    assert "64 rows" in finding.what and "`2` (Linear) (32 of 32)" in finding.what, finding.what
    assert "dead units" not in watched(regression(False), 6)


def test_a_batch_too_small_to_judge_a_unit_is_quiet():
    """One row a step (a policy's rollout): a unit at 0 for one input says nothing."""
    assert "dead units" not in watched(regression(True, rows=1), 6)


def test_a_relu_on_a_hand_written_hinge_that_every_row_satisfies_is_quiet():
    """A one-sided hinge on the scores, relu(-1 - scores) (keep every score above -1), 0 for every row
    once they are: the ReLU takes a margin made from a layer's output, not the layer's output."""
    def train(steps):
        model = nn.Linear(8, 4)
        x = torch.randn(256, 8)
        with torch.no_grad():
            model.weight.zero_()
            model.bias.fill_(3.0)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(steps):
            scores = model(x)
            margins = F.relu(-1.0 - scores)  # every score above -1: all 0
            loss = margins.mean() + 0.01 * scores.pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert "dead units" not in watched(train, 6)


def test_a_convolution_layer_killed_by_raw_pixel_values_is_named():
    """Images fed as 0-255 with a learning rate for [0, 1]: after the first updates nearly every
    channel is 0 at every position of every image."""
    def train(steps, scale=1.0):
        torch.manual_seed(1)
        images = torch.randint(0, 256, (64, 1, 8, 8)).float() * scale
        labels = torch.randint(0, 2, (64,))
        model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(16 * 64, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        for _ in range(steps):
            loss = F.cross_entropy(model(images), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
    found = watched(train, 8)
    assert "dead units" in alarms(found) and "(Conv2d)" in found["dead units"].what, found
    assert "rows x positions" in found["dead units"].what
    assert "dead units" not in watched(lambda s: train(s, scale=1 / 255), 8)


def test_channels_a_norm_layer_switched_off_are_quiet():
    """BatchNorm before the ReLU with most channels' scale at 0 and shift below it (as weight decay
    leaves them, and channel pruning relies on): dead, but not the dying-ReLU bug."""
    def train(steps):
        model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                              nn.Flatten(), nn.Linear(16 * 64, 2))
        with torch.no_grad():
            model[1].weight[2:] = 0.0
            model[1].bias[2:] = -1.0
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for _ in range(steps):
            x = torch.randn(32, 3, 8, 8)
            loss = F.cross_entropy(model(x), (x[:, 0, 0, 0] > 0).long())
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert "dead units" not in watched(train, 6)
