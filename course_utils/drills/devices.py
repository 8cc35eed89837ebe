"""Device bugs (lesson 07): a model and its batch on different devices."""

from __future__ import annotations

from course_utils.drills.core import CodeRun, Drill, Symptom, Variant, code, shuffled_question

MISMATCH_BUGGY = code("""
    import torch
    from torch import nn

    model = nn.Linear(768, 3).to("meta")   # "meta" plays the GPU here; on a Mac read "mps"
    x = torch.randn(32, 768)                # created on the default device: the CPU
    out = model(x)
""")

MISMATCH_FIXED = MISMATCH_BUGGY.replace(
    "x = torch.randn(32, 768)                # created on the default device: the CPU\n",
    "device = next(model.parameters()).device\n"
    "x = torch.randn(32, 768, device=device)  # created where the model lives\n")


def _mismatch_measure(run: CodeRun) -> Symptom:
    if run.error is not None:
        return Symptom(f"forward raised {run.error_text}", True, error=run.error_text)
    out = run["out"]
    return Symptom(f"forward ran: out {tuple(out.shape)} on {out.device.type}, the model's "
                   "device", False)


MISMATCH = Drill(
    id="devices.device_mismatch",
    category="devices",
    title="Model and batch on different devices",
    buggy_code=MISMATCH_BUGGY,
    fixed_code=MISMATCH_FIXED,
    measure=_mismatch_measure,
    question=shuffled_question(
        "devices.device_mismatch",
        "The model was moved to the accelerator (the \"meta\" device stands in for it here: on a Mac, "
        "read \"mps\"); the forward pass raises an error about devices. Why?",
        "x is still a CPU tensor, unlike the model's weights",
        ("The batch is too large for the accelerator's memory",
         "The model must be moved after its inputs, not before",
         "Unified memory should share tensors, so it is a driver bug"),
        "placement is explicit: move (or create) every tensor a model meets on the model's "
        "device, inputs and labels alike"),
    hints=("Compare x.device with next(model.parameters()).device.",
           "Create the batch with device=..., or move it with x.to(device); choose the device "
           "once (course_utils.toolkit.device.pick_device)."),
    explanation="Tensors are created on the CPU unless told otherwise, and PyTorch never moves "
                "them for you, even on Apple silicon's unified memory. Read the model's device "
                "from a parameter and create or move every input (and the labels) there; choose "
                "the device in one place.",
    source="lesson 01 (require_same_device)",
    emulated="the 'meta' device stands in for mps/cuda on a machine without a GPU",
    variants=(
        Variant("a 10-class head on 128 features",
                edits=(("nn.Linear(768, 3)", "nn.Linear(128, 10)"),
                       ("torch.randn(32, 768", "torch.randn(16, 128"))),
        Variant("an MLP classifier",
                {"out": "logits"},
                (("nn.Linear(768, 3)", "nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 4))"),
                 ("torch.randn(32, 768", "torch.randn(8, 64"))),
        Variant("a GRU over sequences",
                {"out": "states"},
                (("nn.Linear(768, 3)", "nn.GRU(8, 16, batch_first=True)"),
                 ("torch.randn(32, 768", "torch.randn(2, 5, 8"), ("out = model(x)", "out, _ = model(x)"))),
    ),
)

DRILLS = (MISMATCH,)
