"""Lesson 05's mastery quiz."""

from course_utils.core.questions import Question, Quiz

QUIZ = Quiz("05", [
    Question(
        "w = x.T.clone() where x is a new (3, 4) tensor. Is w contiguous?",
        ("Yes: clone() always makes a fresh contiguous tensor",
         "No: clone() uses memory_format=torch.preserve_format and keeps the transposed strides",
         "Only on MPS", "It depends on the dtype"),
        1, "clone() and zeros_like default to preserve_format, which is how the encoder of the "
        "addcmul_ story stayed non-contiguous (R1, R9 in references.md)."),
    Question(
        "t = torch.arange(12).view(3, 4). Which of these is a copy?",
        ("t.T", "t[:, ::2]", "t.flip(0)", "t.unsqueeze(0)"),
        2, "flip writes a new tensor in PyTorch (unlike NumPy's flip); the others only change "
        "shape, strides or offset (lesson 05, section 2)."),
    Question(
        "t.T.view(-1) raises, t.T.reshape(-1) works. Why?",
        ("view is deprecated", "view never copies, and no single stride walks the transposed "
         "elements in order; reshape copies when it must", "reshape is slower so it is safer",
         "view only works on 1-D tensors"),
        1, "view must reuse the storage as is; reshape returns a view when it can and a copy "
        "otherwise (lesson 05, section 3)."),
    Question(
        "In the data-path study, which type accounts for the largest share of memory bugs?",
        ("Segmentation faults (20.9%)", "Non-contiguity (30.2%)", "Indexing (14%)",
         "Memory format (11.6%)"),
        1, "non-contiguity bugs were 30.2% of memory bugs, ahead of segmentation faults "
        "(R56 in references.md, section V-B)."),
    Question(
        "In the paper's augmentation experiment, what did keeping every step contiguous give?",
        ("No change", "23 s instead of 40 s on 60,000 CIFAR-10 images",
         "40 s instead of 23 s", "A crash"),
        1, "23 s contiguity-aware vs 40 s default (R56 in references.md, section VI-A): the paper's "
        "'up to 73.9%' is 40 / 23 - 1; lesson 05 measures "
        "its own ratio and says how it compares."),
    Question(
        "Adam's exp_avg_sq for a parameter stored transposed is created by "
        "zeros_like(p, memory_format=torch.preserve_format). What layout does it get?",
        ("Contiguous", "The parameter's transposed layout", "channels_last", "It depends on lr"),
        1, "the state inherits the parameter's strides, so a bug in in-place ops on "
        "non-contiguous outputs reaches the optimizer too (R9 in references.md, lesson 06)."),
])
