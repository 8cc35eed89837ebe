"""Faithful CPU emulations of effects only an Apple GPU shows, each labelled *emulated*.

Each emulation acts at the layer where the real effect happens (PyTorch's dispatcher, or a device
queue), so unmodified code is affected as on an affected Mac. One submodule per effect:
asynchronous execution (lesson 03), CPU fallback (lesson 04), the in-place bug on non-contiguous
outputs (lesson 06).
"""
