"""Lesson 06's mastery quiz: the addcmul_ story, from symptom to cause and repair. Every question comes
in two forms (a retry is served the other one)."""

from course_utils.core.questions import Question, Quiz

_LOST = ("Adam updates exp_avg with lerp_ and exp_avg_sq with mul_ then addcmul_; on the affected Macs "
         "addcmul_/addcdiv_ left a non-contiguous output unchanged (Elana Simon's post, R1 in "
         "references.md).")
_MASKED = ("the masking effect: the update param.addcdiv_ was lost too, so two lost writes hid each "
           "other and nothing looked wrong (R1 in references.md).")
_LINE = (".T is a stride-only view and clone() defaults to memory_format=torch.preserve_format, so the "
         "copy keeps the transposed strides; .contiguous() makes a row-major copy (R1 in references.md).")
_VERSIONS = ("affected: torch < 2.4 on macOS < 15 (issue #118115); PR #124442 fixed it in torch 2.4 on "
             "any macOS. macOS 15 skips the gathering copy only in torch builds with PR #128393 (after "
             "2.4), so an older torch on macOS 15 is uncertain, not healthy (R1-R4 in references.md).")
_FLOAT64 = "the red herring of the story: float32 on the CPU trained as well (R1 in references.md)."
_STATE = ("restart that parameter's state too, or fix the layout before creating the optimizer; "
          "zeros_like keeps the layout (R9 in references.md; exercise 06.repair).")

QUIZ = Quiz("06", [
    (Question(
        "Adam's exp_avg_sq for the encoder was exactly 0 while exp_avg was not. Why?",
        ("The encoder's gradients were all zero, so nothing accumulated",
         "Its addcmul_ write into a non-contiguous tensor was lost",
         "The squared gradients underflowed float32 and became zero",
         "Adam skips the second moment of weights made with .clone()"),
        1, _LOST),
     Question(
        "On an affected Mac, which of Adam's in-place updates to a transposed weight never landed?",
        ("Only exp_avg's lerp_, so its first moment stayed at zero",
         "Every in-place op on it, including its mul_ and lerp_",
         "None: the bug corrupts the gradient computed in backward",
         "exp_avg_sq's addcmul_ and the weight's own addcdiv_"),
        3, _LOST)),
    (Question(
        "With exp_avg_sq stuck at 0, why did the encoder not explode with steps of lr*exp_avg/eps?",
        ("eps is large enough to keep lr * exp_avg / eps small",
         "The update, param.addcdiv_, was lost too: nothing moved",
         "Gradient clipping capped each step at a safe norm",
         "Adam caps its step at lr, whatever exp_avg_sq holds"),
        1, _MASKED),
     Question(
        "The encoder's second moment stayed at 0, yet no loss spike or NaN ever showed up. Why?",
        ("Adam's bias correction rescales a zero moment back up",
         "MPS reported each lost write as a filtered warning",
         "The weight update was lost as well, so nothing moved",
         "float32 rounding made each step too small to notice"),
        2, _MASKED)),
    (Question(
        "Which line made the encoder weight non-contiguous?",
        ("encoder = nn.Linear(d, h, bias=False).to('mps')",
         "encoder.weight.data = decoder.weight.T.clone()",
         "optimizer = torch.optim.Adam(model.parameters())",
         "loss = F.mse_loss(decoder(encoder(x)), x)"),
        1, _LINE),
     Question(
        "Which line starts the encoder as the decoder's transpose with a contiguous layout?",
        ("enc.weight.data = dec.weight.T.clone()",
         "enc.weight.data = dec.weight.T.contiguous()",
         "enc.weight.data = dec.weight.T.clone().detach()",
         "enc.weight.data = dec.weight.T.detach()"),
        1, _LINE)),
    (Question(
        "Which torch/macOS pair is known to have the addcmul_ bug, per the sources?",
        ("torch 2.4 on macOS 14", "torch 2.3 on macOS 14", "torch 2.4 on macOS 13",
         "torch 2.13 on macOS 14"),
        1, _VERSIONS),
     Question(
        "Which torch/macOS pair do the sources leave uncertain (neither known affected nor known "
        "healthy)?",
        ("torch 2.3 on macOS 14", "torch 2.4 on macOS 14", "torch 2.3 on macOS 15",
         "torch 2.13 on macOS 15"),
        2, _VERSIONS)),
    (Question(
        "Switching the model to float64 made training work. What did that really prove?",
        ("Adam needs float64 to keep its second moments from underflowing",
         "Nothing about precision, as with no float64 on MPS it ran on CPU",
         "float64 tensors are always contiguous, which avoided the bug",
         "float64 has no addcmul_ kernel on MPS, so Adam took another path"),
        1, _FLOAT64),
     Question(
        "float64 'fixed' the frozen encoder. Which run tells precision apart from the device?",
        ("float16 on mps: if it also fails, precision is to blame",
         "float64 on mps with a tenfold lower learning rate",
         "float32 on the CPU: if it trains, the device mattered",
         "float32 on mps with a larger eps in Adam's update"),
        2, _FLOAT64)),
    (Question(
        "You make encoder.weight contiguous AFTER Adam has taken steps on an affected Mac, and change "
        "nothing else. What happens?",
        ("It trains normally from then on: the layout is fixed",
         "Huge steps, as exp_avg_sq stays 0 and addcdiv_ lands",
         "Nothing changes: the encoder stays frozen as before",
         "PyTorch raises an error about the changed layout"),
        1, _STATE),
     Question(
        "You fixed encoder.weight's layout mid-training on an affected Mac. What else must you do?",
        ("Nothing: Adam's state follows the weight's new layout",
         "Lower the learning rate for a few steps to absorb it",
         "Call torch.mps.synchronize() so the layout takes effect",
         "Rebuild its Adam state, whose buffers kept the old layout"),
        3, _STATE)),
])
