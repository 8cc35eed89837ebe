"""Lesson 05's mastery quiz: strides, views and copies, the data-path study, optimizer state layout.
Every question comes in two forms (a retry is served the other one)."""

from course_utils.core.questions import Question, Quiz

_PRESERVE = ("clone() and zeros_like default to preserve_format, which is how the encoder of the "
             "addcmul_ story stayed non-contiguous (R1, R9 in references.md).")
_VIEWS = ("flip and advanced indexing write a new tensor in PyTorch (unlike NumPy's flip); slicing, .T "
          "and unsqueeze only change shape, strides or offset (lesson 05, section 2).")
_RESHAPE = ("view must reuse the storage as is; reshape returns a view when it can and a copy "
            "otherwise (lesson 05, section 3).")
_STUDY = ("non-contiguity bugs were 30.2% of memory bugs, ahead of segmentation faults (20.9%) "
          "(R56 in references.md, section V-B).")
_PAPER = ("23 s contiguity-aware vs 40 s default (R56 in references.md, section VI-A): the paper's "
          "'up to 73.9%' is 40 / 23 - 1; lesson 05 measures its own ratio and says how it compares.")
_STATE = ("the state inherits the parameter's strides, so a bug in in-place ops on non-contiguous "
          "outputs reaches the optimizer too (R9 in references.md, lesson 06).")

QUIZ = Quiz("05", [
    (Question(
        "w = x.T.clone() where x is a new (3, 4) tensor. Is w contiguous?",
        ("Yes: clone() always returns a fresh, contiguous tensor",
         "No: by default clone() keeps the transposed strides",
         "Only on MPS, whose clone() keeps the input's layout",
         "It depends on the dtype: floats keep strides, ints not"),
        1, _PRESERVE),
     Question(
        "p = w.T for a new (5, 3) tensor w, so p's strides are (1, 3). What are the strides of "
        "torch.zeros_like(p)?",
        ("(3, 1)", "(5, 1)", "(1, 3)", "(1, 5)"),
        2, _PRESERVE)),
    (Question(
        "t = torch.arange(12).view(3, 4). Which of these is a copy?",
        ("t.T", "t[:, ::2]", "t.flip(0)", "t.unsqueeze(0)"),
        2, _VIEWS),
     Question(
        "t = torch.arange(12).view(3, 4). Which of these shares t's storage?",
        ("t.flip(1)", "t[[0, 2]]", "t[1:, ::2]", "t[t > 5]"),
        2, _VIEWS)),
    (Question(
        "t.T.view(-1) raises, t.T.reshape(-1) works. Why?",
        ("view is deprecated, so it refuses what reshape accepts",
         "view never copies, and no one stride walks t.T in order",
         "reshape is slower, so it checks the layout more closely",
         "view works only on 1-D tensors, and t.T has two dims"),
        1, _RESHAPE),
     Question(
        "y = x.T.reshape(-1) for a new (3, 4) tensor x. Does y share memory with x?",
        ("Yes: reshape always returns a view of its input",
         "Yes: reshape is view with a kinder error message",
         "No, as no single stride walks x.T in order",
         "Only on the CPU; on MPS reshape always makes a copy"),
        2, _RESHAPE)),
    (Question(
        "In the data-path study, which type accounts for the largest share of memory bugs?",
        ("Segmentation faults", "Non-contiguity", "Indexing errors", "Memory format"),
        1, _STUDY),
     Question(
        "In the data-path study, what share of the memory bugs were non-contiguity bugs?",
        ("11.6%", "20.9%", "30.2%", "41.9%"),
        2, _STUDY)),
    (Question(
        "In the paper's augmentation experiment, what did keeping every step contiguous give?",
        ("No measurable change at CIFAR-10's image size",
         "23 s instead of 40 s on 60,000 CIFAR-10 images",
         "40 s instead of 23 s: the copies cost more",
         "A crash on the GPU, where strides must match"),
        1, _PAPER),
     Question(
        "The paper measured 23 s contiguity-aware against 40 s by default, and reports 'up to "
        "73.9%'. Which ratio is that?",
        ("40 / 23 - 1", "1 - 23 / 40", "40 / 23", "23 / 40 + 1"),
        0, _PAPER)),
    (Question(
        "Adam's exp_avg_sq for a parameter stored transposed is created by "
        "zeros_like(p, memory_format=torch.preserve_format). What layout does it get?",
        ("Contiguous: optimizer state is always laid out fresh",
         "The parameter's own transposed layout",
         "channels_last, the default for 2-D state",
         "It depends on the learning rate and eps"),
        1, _STATE),
     Question(
        "Which line makes optimizer-style state that is contiguous whatever the parameter's layout?",
        ("torch.zeros_like(p, memory_format=torch.preserve_format)", "p.clone().zero_()",
         "torch.zeros_like(p, memory_format=torch.contiguous_format)", "torch.empty_like(p).zero_()"),
        2, _STATE)),
])
