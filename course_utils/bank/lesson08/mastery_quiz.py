"""Lesson 08's mastery quiz."""

from course_utils.core.questions import Question, Quiz

QUIZ = Quiz("08", [
    Question(
        "An interviewer shows a training loop whose loss plateaus. What do you do first?",
        ("State a hypothesis and the measurement that would confirm or refute it",
         "Lower the learning rate tenfold and rerun: plateaus usually mean overshooting",
         "Rewrite the training loop from scratch so that the bug cannot survive",
         "Switch to float64 to rule out precision before looking at anything else"),
        0, "hypothesis first, then the smallest repro, then a measurement (lesson 08; the post's "
           "float64 red herring shows what tuning without a hypothesis costs, R1 in references.md)."),
    Question(
        "In the haunted script, up.weight = down.weight.T.clone() trains on the CPU but stays frozen "
        "on the affected Mac. Which fix works?",
        ("down.weight.T.contiguous()", "down.weight.T.clone().detach()",
         "nn.Parameter(down.weight.T.clone())", "Set requires_grad=True on up.weight"),
        0, "clone() keeps the transposed layout (preserve_format) and Adam's addcmul_/addcdiv_ into a "
           "non-contiguous tensor were lost on torch < 2.4 with macOS < 15 (R1, R2 in references.md)."),
    Question(
        "trace() shows aten::embedding_renorm_ falling back to the CPU in every forward. Where does it "
        "come from?",
        ("nn.Embedding(..., max_norm=1.0)", "The mean over the sequence", "Adam's state",
         "F.cross_entropy"),
        0, "max_norm makes the embedding renormalise the rows it looks up, in place, with "
           "embedding_renorm_, which MPS always sends to the CPU (R48, R53 in references.md)."),
    Question(
        "The capstone logs run.log(loss.item()) every step. On an accelerator, what does that cost?",
        ("A host sync every step: the CPU waits for the queued work before it can read the value",
         "Nothing: .item() returns a value cached when the loss was computed",
         "Only memory: each .item() keeps the loss's graph alive until the next step",
         "A copy of the whole model to the host, since the loss depends on every weight"),
        0, ".item() reads a device value on the host, so it waits for every queued kernel (R40 in "
           "references.md); "
           "keep losses on the device and read them in groups (lesson 03)."),
    Question(
        "A 'model not learning' loop calls optimizer.step() only when step % 4 == 0 and never "
        "zero_grad(). What is wrong?",
        ("Gradients accumulate across every batch and are never cleared; the effective update "
         "keeps growing", "Adam cannot step every 4 batches: its moments need one step per batch",
         "The learning rate is too low for an update that happens only every 4 batches",
         "Nothing: stepping every 4 batches is exactly how gradient accumulation works"),
        0, "backward() adds into .grad; without zero_grad() after each step the sum covers every "
           "past batch (R61 in references.md)."),
    Question(
        "With no TTY, `course drill` refuses to run unless you pass --stdin. Why?",
        ("It reads answers interactively; a pipe without --stdin is more likely a mistake than a "
         "deliberate script", "It needs a GPU to run the buggy code behind the '?' answer",
         "The drill clock counts only in a browser, so it needs Jupyter",
         "It writes the answers into the lesson's notebook, which must be open"),
        0, "lesson 08: the terminal drills read your hypothesis and answer from the keyboard; "
           "--stdin makes piping answers deliberate (tests feed a full seeded round that way)."),
])
