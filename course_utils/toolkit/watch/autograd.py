"""``torch.autograd.backward`` and ``torch.autograd.grad`` wrapped for ``course watch``: PyTorch has
no global pre-backward hook, and which tensor is the loss (and which forwards a backward used) is
only known there. ``grad`` (an adversarial input, a gradient penalty) tells only the model tracker
that a backward ran; it is not a training loss.
"""

from __future__ import annotations

import torch


def install(watcher) -> None:
    """Replace both functions with wrappers that call the watcher first."""
    watcher._backward, watcher._grad = torch.autograd.backward, torch.autograd.grad
    original_backward, original_grad = watcher._backward, watcher._grad

    def backward(tensors, *args, **kwargs):
        if watcher._in_backward or watcher.paused:  # re-entered through a torch function mode
            return original_backward(tensors, *args, **kwargs)
        watcher._in_backward = True
        try:
            watcher._on_backward(tensors)
            out = original_backward(tensors, *args, **kwargs)
        finally:
            watcher._in_backward = False
        if not watcher.optimizers:  # a hand-written update: its step starts after backward
            watcher._after_backward()
        return out

    def grad(outputs, *args, **kwargs):
        if watcher.live and not watcher.paused and not watcher._in_backward:
            try:
                watcher.models.clear_pending(outputs)
            except Exception as err:  # noqa: BLE001 - the watcher's error must not become the script's
                watcher.fail(err, "autograd.grad")
        return original_grad(outputs, *args, **kwargs)

    backward.__wrapped__, grad.__wrapped__ = original_backward, original_grad
    torch.autograd.backward, torch.autograd.grad = backward, grad


def uninstall(watcher) -> None:
    """Put back what ``install`` replaced (unless someone replaced it again since)."""
    for name, original in (("backward", watcher._backward), ("grad", getattr(watcher, "_grad", None))):
        if original is not None and getattr(getattr(torch.autograd, name), "__wrapped__", None) is original:
            setattr(torch.autograd, name, original)
