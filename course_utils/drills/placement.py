"""A device bug inside the model (lesson 07): forward() creates a tensor without device=, so it
lands on the CPU while the model's weights and inputs live on the accelerator."""

from __future__ import annotations

from course_utils.drills.core import CodeRun, Drill, Symptom, Variant, code, shuffled_question

FORWARD_BUGGY = code("""
    import math
    import torch
    from torch import nn

    class Encoder(nn.Module):
        def __init__(self, vocab, dim):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.out = nn.Linear(dim, vocab)

        def forward(self, ids):
            h = self.embed(ids)
            dim = h.shape[-1]
            positions = torch.arange(ids.shape[1]).unsqueeze(1)
            freqs = torch.exp(torch.arange(0, dim, 2) * (-math.log(10000.0) / dim))
            angles = positions * freqs
            h = h + torch.cat([angles.sin(), angles.cos()], dim=-1)
            return self.out(h)

    torch.manual_seed(0)
    model = Encoder(50, 16).to("meta")
    ids = torch.randint(0, 50, (2, 8)).to("meta")
    logits = model(ids)
""")

FORWARD_FIXED = FORWARD_BUGGY.replace(
    "torch.arange(ids.shape[1]).unsqueeze(1)",
    "torch.arange(ids.shape[1], device=ids.device).unsqueeze(1)   # where the input lives").replace(
    "torch.arange(0, dim, 2) *", "torch.arange(0, dim, 2, device=h.device) *")


def _forward_measure(run: CodeRun) -> Symptom:
    if run.error is not None:
        return Symptom(f"forward raised {run.error_text}", True, error=run.error_text)
    out = run["logits"]
    return Symptom(f"forward ran: logits {tuple(out.shape)} on {out.device.type}, the model's "
                   "device", False, {"shape": tuple(out.shape)})


FORWARD = Drill(
    id="devices.tensor_created_in_forward",
    category="devices",
    title="A tensor created inside forward() without device=",
    buggy_code=FORWARD_BUGGY,
    fixed_code=FORWARD_FIXED,
    measure=_forward_measure,
    question=shuffled_question(
        "devices.tensor_created_in_forward",
        "The model and its input were both moved to the accelerator (\"meta\" stands in for it "
        "here: on a Mac, read \"mps\"), yet forward() raises an error about devices. Why?",
        "forward() builds a CPU tensor, as it passes no device=",
        ("torch.randint cannot create indices for an accelerator",
         "math.log returns a Python float, which stays on the CPU",
         "model.to() moved the Embedding but not the Linear layer"),
        "factory functions (arange, ones, zeros, randn) create on the default device unless "
        "given device=; only the module's registered tensors move with model.to()"),
    hints=("Which tensors in forward() were not made from the input or from a parameter?",
           "Give each factory call device= the input's device (or register a buffer, which "
           "moves with model.to())."),
    explanation="model.to(device) moves the tensors the module owns (parameters and buffers). A "
                "tensor that forward() creates with torch.arange, torch.ones or torch.zeros is "
                "new on every call and goes to the default device, the CPU, unless device= says "
                "otherwise, so adding it to activations on the accelerator fails. Create it "
                "with device= set to the input's device, derive it from the input "
                "(torch.ones_like), or register_buffer it once in __init__ so model.to() moves "
                "it too.",
    source="R87 in references.md (factory functions create on the default device, initially "
           "the CPU)",
    emulated="the 'meta' device stands in for mps/cuda on a machine without a GPU; on cuda the "
             "error reads 'Expected all tensors to be on the same device, ...' (the exact text "
             "on mps is uncertain: not run here)",
    variants=(
        Variant("a causal mask built in forward",
                edits=(("        dim = h.shape[-1]\n", ""),
                       ("positions = torch.arange(ids.shape[1]).unsqueeze(1)",
                        "size = ids.shape[1]"),
                       ("positions = torch.arange(ids.shape[1], device=ids.device).unsqueeze(1)"
                        "   # where the input lives", "size = ids.shape[1]"),
                       ("freqs = torch.exp(torch.arange(0, dim, 2) * (-math.log(10000.0) / dim))",
                        "blocked = torch.ones(size, size, dtype=torch.bool).triu(1)"),
                       ("freqs = torch.exp(torch.arange(0, dim, 2, device=h.device) * "
                        "(-math.log(10000.0) / dim))",
                        "blocked = torch.ones(size, size, dtype=torch.bool, device=h.device)"
                        ".triu(1)"),
                       ("angles = positions * freqs", "scores = h @ h.transpose(1, 2) / "
                        "math.sqrt(h.shape[-1])"),
                       ("h = h + torch.cat([angles.sin(), angles.cos()], dim=-1)",
                        "h = scores.masked_fill(blocked, float(\"-inf\")).softmax(-1) @ h"))),
        Variant("a start token of zeros prepended in forward",
                {"Encoder": "Decoder", "ids": "tokens"},
                (("        dim = h.shape[-1]\n", ""),
                 ("positions = torch.arange(ids.shape[1]).unsqueeze(1)",
                  "start = torch.zeros(h.shape[0], 1, h.shape[-1])"),
                 ("positions = torch.arange(ids.shape[1], device=ids.device).unsqueeze(1)"
                  "   # where the input lives",
                  "start = torch.zeros(h.shape[0], 1, h.shape[-1], device=h.device)"),
                 ("        freqs = torch.exp(torch.arange(0, dim, 2) * "
                  "(-math.log(10000.0) / dim))\n", ""),
                 ("        freqs = torch.exp(torch.arange(0, dim, 2, device=h.device) * "
                  "(-math.log(10000.0) / dim))\n", ""),
                 ("        angles = positions * freqs\n", ""),
                 ("h = h + torch.cat([angles.sin(), angles.cos()], dim=-1)",
                  "h = torch.cat([start, h], dim=1)"))),
        Variant("a 32-wide model over a vocabulary of 100, batch of 4",
                {"model": "net", "logits": "scores", "h": "x"},
                (("Encoder(50, 16)", "Encoder(100, 32)"),
                 ("torch.randint(0, 50, (2, 8))", "torch.randint(0, 100, (4, 12))"))),
    ),
)

DRILLS = (FORWARD,)
