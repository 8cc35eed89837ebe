"""Lesson 06's mastery quiz."""

from course_utils.core.questions import Question, Quiz

QUIZ = Quiz("06", [
    Question(
        "Adam's exp_avg_sq for the encoder was exactly 0 while exp_avg was not. Why?",
        ("The encoder's gradients were zero", "exp_avg_sq is updated with addcmul_, whose write into a "
         "non-contiguous tensor was lost; exp_avg uses lerp_, which worked",
         "float32 underflow of the squared gradients", "Adam skips parameters made with .clone()"),
        1, "Adam updates exp_avg with lerp_ and exp_avg_sq with mul_ then addcmul_; on the affected "
           "Macs addcmul_/addcdiv_ left a non-contiguous output unchanged (Elana Simon's post, R1 in "
           "references.md)."),
    Question(
        "With exp_avg_sq stuck at 0, why did the encoder not explode with steps of lr*exp_avg/eps?",
        ("eps is large", "The parameter update itself, param.addcdiv_, was lost too: nothing moved",
         "Gradient clipping", "Adam caps its step size"),
        1, "the masking effect: two lost writes hid each other, so nothing looked wrong (R1 in "
        "references.md)."),
    Question(
        "Which line made the encoder weight non-contiguous?",
        ("nn.Linear(d, h)", "encoder.weight.data = decoder.weight.T.clone()",
         "torch.optim.Adam(model.parameters())", "loss.backward()"),
        1, ".T is a stride-only view and clone() defaults to memory_format=torch.preserve_format, so "
           "the copy keeps the transposed strides (R1 in references.md)."),
    Question(
        "Which torch/macOS pair is known to have the addcmul_ bug, per the sources?",
        ("torch 2.4 on macOS 14", "torch 2.3 on macOS 14", "torch 2.4 on macOS 13",
         "torch 2.13 on macOS 14"),
        1, "affected: torch < 2.4 on macOS < 15 (issue #118115); PR #124442 fixed it in torch 2.4 on "
           "any macOS. macOS 15 skips the gathering copy only in torch builds with PR #128393 (after "
           "2.4), so an older torch on macOS 15 is uncertain, not healthy (R1-R4 in references.md)."),
    Question(
        "Switching the model to float64 made training work. What did that really prove?",
        ("Adam needs float64", "Nothing about precision: MPS has no float64, so the run moved to the "
         "CPU, which has no such bug", "float64 tensors are always contiguous",
         "float64 disables addcmul_"),
        1, "the red herring of the story: float32 on the CPU trained as well (R1 in references.md)."),
    Question(
        "You make encoder.weight contiguous AFTER Adam has taken steps on an affected Mac, and change "
        "nothing else. What happens?",
        ("It trains normally", "The encoder takes huge steps: its exp_avg_sq (made by zeros_like, "
         "still transposed) stays 0 while param.addcdiv_ now lands", "Nothing changes: still frozen",
         "PyTorch raises an error"),
        1, "restart that parameter's state too, or fix the layout before creating the optimizer; "
           "zeros_like keeps the layout (R9 in references.md; exercise 06.repair)."),
])
