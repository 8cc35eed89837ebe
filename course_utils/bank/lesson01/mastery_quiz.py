"""Lesson 01's mastery quiz: the MPS states, the float64 red herring, placement, the fallback variable,
hosted CI runners. Every question comes in two forms (a retry is served the other one)."""

from __future__ import annotations

from course_utils.core.questions import Question, Quiz

_STATES = ("is_built asks whether this wheel knows MPS; is_available whether this machine can use it "
           "now (R19, R23 in references.md).")
_FLOAT64 = "a red herring: float32 on CPU also trained; the device mattered (R1 in references.md)."
_PLACEMENT = "placement is explicit even with unified memory; move model and batch together (lesson 01)."
_VARIABLE = "the variable is read once when the MPS library registers (R48 in references.md)."
_RUNNERS = ("GitHub's docs say MPS is unsupported on those runners (R25, R26 in references.md); "
            "pick_device probes an allocation for that reason.")

QUIZ = Quiz("01", [
    (Question(
        "torch.backends.mps.is_built() is True but is_available() is False. What does that tell you?",
        ("This wheel was built without MPS, so a reinstall is the fix",
         "This wheel has MPS, but this machine cannot use it right now",
         "MPS works; is_available() stays False until a tensor is made",
         "The fallback variable is set, so every op runs on the CPU"),
        1, _STATES),
     Question(
        "On a Linux laptop, torch.backends.mps.is_built() returns False. Which state is this?",
        ("Built but unavailable: the wheel has MPS, the machine has no GPU",
         "Available on CPU: MPS runs as an emulation without a GPU",
         "Not built: this wheel has no MPS backend, like every Linux wheel",
         "Fallback: MPS ops go to the CPU until the variable is set"),
        2, _STATES)),
    (Question(
        "Why did switching to float64 seem to 'fix' the frozen encoder in the addcmul_ story?",
        ("float64 gave the tiny second moments of Adam enough precision to train",
         "MPS has no float64, so it ran on the CPU, which has no such bug",
         "float64 tensors are always laid out contiguously in memory",
         "Adam switches to a separate, correct kernel for float64 weights"),
        1, _FLOAT64),
     Question(
        "Training on mps stalled; model.double() 'fixed' it. What do you run before blaming precision?",
        ("float16 on mps: if it stalls too, precision is the cause",
         "float64 with a lower learning rate, to rule out the step size",
         "bfloat16 on mps, which keeps the range of float32",
         "float32 on the CPU: if it trains, the device mattered"),
        3, _FLOAT64)),
    (Question(
        "A model is on mps and the batch is on cpu. What happens in the forward pass?",
        ("PyTorch moves the batch to mps for you before the first layer",
         "It raises an error about tensors on different devices",
         "It runs silently on the CPU, since that is where the batch is",
         "It works: unified memory lets both devices read the same batch"),
        1, _PLACEMENT),
     Question(
        "You move the model and the inputs to mps but leave the labels on cpu. What happens at the loss?",
        ("The labels are copied to mps for you, silently, once per step",
         "The loss runs on the CPU and its gradient is sent back to mps",
         "The loss raises an error: its inputs are on different devices",
         "Unified memory lets the loss read the labels where they are"),
        2, _PLACEMENT)),
    (Question(
        "You set os.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = '1' in a cell after import torch. "
        "What now?",
        ("Fallback is on from the next op, since the variable is now set",
         "Nothing changes until a restart that sets it before import",
         "Only the tensors created after that cell will fall back to the CPU",
         "torch re-reads the variable on every op, so it works at once"),
        1, _VARIABLE),
     Question(
        "A script's first line sets PYTORCH_ENABLE_MPS_FALLBACK=1 in os.environ, then imports torch. "
        "An op with no MPS kernel runs. What happens?",
        ("It still raises: the variable only counts when set in the shell",
         "It runs on mps more slowly, through an emulated Metal kernel",
         "It falls back silently: the warning needs a second variable",
         "It runs on the CPU, with a warning that it fell back there"),
        3, _VARIABLE)),
    (Question(
        "A CI runner on macOS reports mps available but every allocation fails. Why?",
        ("A bug in is_available(), fixed by upgrading torch on the runner",
         "Hosted arm64 macOS runners lack MPS though is_available() is True",
         "The runner has too little RAM, so MPS refuses every single allocation",
         "MPS needs float64 there, which the hosted runners switch off"),
        1, _RUNNERS),
     Question(
        "Why does pick_device() try one tiny allocation on mps before it returns that device?",
        ("The first allocation warms the allocator up for the lesson",
         "It measures free memory to choose the lesson's batch size",
         "is_available() can say True where MPS fails (hosted CI)",
         "is_built() alone cannot tell an arm64 wheel from an x86 one"),
        2, _RUNNERS)),
])
