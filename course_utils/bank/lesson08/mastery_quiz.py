"""Lesson 08's mastery quiz: the interview method, the capstone's bugs and their fixes, the drill
command. Every question comes in two forms (a retry is served the other one)."""

from course_utils.core.questions import Question, Quiz

_METHOD = ("hypothesis first, then the smallest repro, then a measurement (lesson 08; the post's "
           "float64 red herring shows what tuning without a hypothesis costs, R1 in references.md).")
_LAYOUT = ("clone() keeps the transposed layout (preserve_format) and Adam's addcmul_/addcdiv_ into a "
           "non-contiguous tensor were lost on torch < 2.4 with macOS < 15 (R1, R2 in references.md).")
_FROZEN = ("the capstone's frozen checkpoint wants every parameter the reference trains to be trained: "
           "freezing the affected weight hides the lost writes instead of fixing the layout (lesson 08).")
_RENORM = ("max_norm makes the embedding renormalise the rows it looks up, in place, with "
           "embedding_renorm_, which MPS always sends to the CPU (R48, R53 in references.md).")
_ROWS = ("the fixed script keeps max_norm's effect with device ops outside the forward: clip_rows_ "
         "rescales rows longer than 1 after each step (lesson 08; embedding_renorm_ falls back, R48).")
_ITEM = (".item() reads a device value on the host, so it waits for every queued kernel (R40 in "
         "references.md); keep losses on the device and read them in groups (lesson 03).")
_ACCUMULATE = ("backward() adds into .grad; without zero_grad() after each step the sum covers every "
               "past batch; lesson 07 measures such a sum overshooting to about seven times one "
               "gradient, then swinging around a level several times too large (R61 in references.md).")
_STDIN = ("lesson 08: the terminal drills read your hypothesis and answer from the keyboard; --stdin "
          "makes piping answers deliberate (tests feed a full seeded round that way).")

QUIZ = Quiz("08", [
    (Question(
        "An interviewer shows a training loop whose loss plateaus. What do you do first?",
        ("State a hypothesis and the measurement that would test it",
         "Lower the learning rate tenfold: plateaus mean overshooting",
         "Rewrite the loop from scratch so the bug cannot survive",
         "Switch to float64 to rule out precision before anything"),
        0, _METHOD),
     Question(
        "An interviewer says 'the loss turns NaN after 300 steps'. What is your first move?",
        ("Add gradient clipping and rerun: it cures most NaN losses",
         "Switch to float64 so that no value can overflow any more",
         "Name a suspected cause and the check that would confirm it",
         "Lower the learning rate tenfold and watch the loss again"),
        2, _METHOD)),
    (Question(
        "In the haunted script, up.weight = down.weight.T.clone() trains on the CPU but stays frozen "
        "on the affected Mac. Which fix works?",
        ("down.weight.T.contiguous()", "down.weight.T.clone().detach()",
         "nn.Parameter(down.weight.T.clone())", "requires_grad=True on up.weight"),
        0, _LAYOUT),
     Question(
        "Which change to the haunted script's up.weight does the capstone's frozen checkpoint reject, "
        "although the lost writes are gone?",
        ("up.weight.data = down.weight.T.contiguous()",
         "up.weight.requires_grad_(False) after the copy",
         "up.weight.data = down.weight.T.clone(memory_format=torch.contiguous_format)",
         "up.weight.data.copy_(down.weight.T) into its own storage"),
        1, _FROZEN)),
    (Question(
        "trace() shows aten::embedding_renorm_ falling back to the CPU in every forward. Where does it "
        "come from?",
        ("The nn.Embedding(..., max_norm=1.0) layer",
         "The mean over the sequence in the forward",
         "Adam's state, updated in place every step",
         "F.cross_entropy with its label smoothing"),
        0, _RENORM),
     Question(
        "The capstone must keep token vectors within norm 1 without embedding_renorm_ in the forward. "
        "What does the fixed script do?",
        ("Keeps max_norm=1.0 and sets the fallback variable first",
         "Normalises the token vectors on the CPU inside the forward",
         "Drops the norm limit and lowers the learning rate instead",
         "Rescales long rows of the table with device ops after each step"),
        3, _ROWS)),
    (Question(
        "The capstone logs run.log(loss.item()) every step. On an accelerator, what does that cost?",
        ("A host sync every step: the CPU waits for the queued work",
         "Nothing: .item() returns a value cached by the loss",
         "Memory: each .item() keeps the loss's graph alive",
         "A copy of the whole model to the host, every step"),
        0, _ITEM),
     Question(
        "The fixed capstone logs run.log(loss.detach()). When does the host read the losses?",
        ("Every step, since log() turns each value into a float",
         "Never: a detached tensor cannot be read by the host",
         "Once per group of lab.log_every values, in one read",
         "Only when the run raises, to print the last loss"),
        2, _ITEM)),
    (Question(
        "A 'model not learning' loop calls optimizer.step() only when step % 4 == 0 and never "
        "zero_grad(). What is wrong?",
        ("Gradients of every past batch pile up, so each step overshoots",
         "Adam cannot step every 4 batches: its moments need every batch",
         "The learning rate is too low for an update every 4 batches",
         "Nothing: stepping every 4 batches is gradient accumulation"),
        0, _ACCUMULATE),
     Question(
        "A loop divides each loss by 4, steps every 4 batches and calls zero_grad() right after each "
        "step. What does each step apply?",
        ("The sum of 4 gradients: 4 times too large for the lr",
         "The mean gradient of the last 4 batches, as intended",
         "One batch's gradient: zero_grad() dropped the rest",
         "A quarter of one batch's gradient, shrunk by the division"),
        1, "with zero_grad() after each step, .grad holds the sum of the last 4 losses' gradients, each "
        "divided by 4: their mean, which is gradient accumulation (R61 in references.md; lesson 07).")),
    (Question(
        "With no TTY, `course drill` refuses to run unless you pass --stdin. Why?",
        ("It reads answers interactively; a pipe is more likely a mistake",
         "It needs a GPU to run the buggy code behind the '?' answer",
         "The drill clock counts only in a browser, so it needs Jupyter",
         "It writes answers into the lesson's notebook, which must be open"),
        0, _STDIN),
     Question(
        "How can a script feed a whole timed round of `course drill` its answers?",
        ("It cannot: the drill's clock needs a person at the keyboard",
         "By piping them in with --stdin, which makes it deliberate",
         "By editing the lesson 08 notebook's widget state on disk",
         "By setting an environment variable with the answer letters"),
        1, _STDIN)),
])
