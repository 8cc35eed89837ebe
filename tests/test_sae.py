"""Do lesson 06's model, data and ready-made runs behave as the lesson and the exercises assume?"""

import pickle

import torch

from course_utils.labs.sae import (
    TopKSAE,
    Trainer,
    activations,
    continue_training,
    inherited_run,
    small_sae,
    train,
)
from course_utils.toolkit.emulate.inplace import AFFECTED, HEALTHY
from course_utils.toolkit.layout import audit


def test_is_the_story_init_transposed_and_the_untied_one_contiguous():
    assert not TopKSAE().encoder.weight.is_contiguous()
    assert TopKSAE(tied_init=False).encoder.weight.is_contiguous()


def test_does_the_sae_keep_only_k_active_features():
    model = TopKSAE(d_model=8, d_hidden=16, k=3)
    pre = model.encoder(torch.randn(5, 8) - model.decoder.bias)
    top = pre.topk(3, dim=-1)
    codes = torch.zeros_like(pre).scatter(-1, top.indices, top.values.relu())
    assert ((codes != 0).sum(-1) <= 3).all()


def test_are_the_activations_repeatable_and_seed_dependent():
    assert torch.equal(activations(64, seed=3), activations(64, seed=3))
    assert not torch.equal(activations(64, seed=3), activations(64, seed=4))


def test_does_train_report_losses_relative_to_the_variance_and_go_down():
    torch.manual_seed(0)
    losses = train(TopKSAE(tied_init=False), activations(512), steps=60)
    assert 0.5 < losses[0] < 1.5 and losses[-1] < 0.5 * losses[0]


def test_does_a_trainer_survive_pickling_and_train_on_its_machine():
    trainer = pickle.loads(pickle.dumps(Trainer(small_sae(0, 8), machine=AFFECTED)))
    before = trainer.model.encoder.weight.detach().clone()
    for _ in range(3):
        trainer.step()
    assert torch.equal(trainer.model.encoder.weight, before)
    healthy = Trainer(small_sae(0, 8), machine=HEALTHY)
    healthy.step()
    assert not torch.equal(healthy.model.encoder.weight, before)


def test_is_an_inherited_run_repeatable_with_its_transposed_state():
    model, optimizer = inherited_run(0)
    again, _ = inherited_run(0)
    assert torch.equal(model.decoder.weight, again.decoder.weight)
    names = audit(optimizer, names=model).names
    assert "state[encoder.weight].exp_avg_sq" in names
    assert optimizer.state[model.encoder.weight]["exp_avg_sq"].abs().max() == 0


def test_does_continue_training_return_rounded_losses():
    losses = continue_training(*inherited_run(1), steps=4)
    assert len(losses) == 4 and all(round(v, 6) == v for v in losses)
