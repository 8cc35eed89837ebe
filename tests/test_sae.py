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


def forward_with_codes(model: TopKSAE, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The model's output, and the sparse codes its forward pass handed to the decoder."""
    seen = []
    hook = model.decoder.register_forward_hook(lambda module, args, out: seen.append(args[0]))
    try:
        out = model(x)
    finally:
        hook.remove()
    (codes,) = seen
    return out, codes


def test_does_the_sae_keep_only_the_k_largest_pre_activations_relud():
    torch.manual_seed(0)
    model = TopKSAE(d_model=8, d_hidden=16, k=3, tied_init=False)
    with torch.no_grad():
        model.decoder.bias.uniform_(-1, 1)  # the encoder sees x minus this bias
        model.encoder.bias -= 1.0  # many rows with fewer than k positive pre-activations
    x = torch.randn(256, 8)
    out, codes = forward_with_codes(model, x)
    with torch.no_grad():
        pre = model.encoder(x - model.decoder.bias)
        assert torch.equal(out, model.decoder(codes))
    active = codes != 0
    positives = (pre.topk(3, dim=-1).values > 0).sum(-1)
    assert torch.equal(active.sum(-1), positives)  # k at most; a negative one is ReLU'd to 0
    assert 0 < (positives < 3).sum() < len(x), "the data must hold both kinds of rows"
    assert (codes >= 0).all() and torch.equal(codes[active], pre[active])
    for row in range(len(x)):  # every kept code beats every dropped pre-activation
        if active[row].any():
            assert pre[row][active[row]].min() >= pre[row][~active[row]].max()


def test_does_a_larger_k_keep_more_features_and_change_the_reconstruction():
    torch.manual_seed(1)
    x = torch.randn(32, 8)
    seen = {}
    for k in (1, 4):
        torch.manual_seed(2)  # the same weights for both
        seen[k] = forward_with_codes(TopKSAE(d_model=8, d_hidden=16, k=k, tied_init=False), x)
    (out1, codes1), (out4, codes4) = seen[1], seen[4]
    assert out1.shape == out4.shape == x.shape and not torch.allclose(out1, out4)
    assert ((codes1 != 0).sum(-1) <= 1).all() and ((codes4 != 0).sum(-1) > 1).any()


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
