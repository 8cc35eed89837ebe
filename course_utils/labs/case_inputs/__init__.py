"""Every object an exercise's case may hold that the course defines: the one home of case inputs.

``course grade`` pickles the cases it draws for the submission's process, where the bank is off
limits and case inputs are allowed (``grader.sandbox.pickle_cases`` refuses a case naming a course
module other than this package, the labs and the toolkit). So what a case holds is defined here,
one module per lesson, never beside its exercise, and nothing here imports the bank. By lesson:

- 02: ``SAVING_EXAMPLES`` (forwards whose saved-for-backward bytes differ; 02.saved_bytes) and
  ``SimulatedOOMStep`` (a step that runs out of memory above a size; 02.retry_halving);
- 03: ``FakeDevice`` (an asynchronous device with a fake clock; 03.honest_timer), ``make_loop``
  (generated training loops; 03.sync_lines) and ``TrainingRun`` (training steps whose losses count
  their host reads; 03.log_every_n);
- 04: ``Watched`` (a tensor whose ops are recorded at the dispatcher; 04.prefix_sum);
- 07: ``LinearKeepingGrad`` (a layer whose copies keep ``.grad``; 07.zero_grad_loop, 07.accumulate).
"""


from course_utils.labs.case_inputs.inputs_layers import LinearKeepingGrad  # noqa: F401
from course_utils.labs.case_inputs.inputs_memory import (  # noqa: F401
    SAVING_EXAMPLES,
    SimulatedOOMStep,
    gram,
    linear_then_tanh,
    sigmoid_times_x,
    sin_then_cos,
    slice_sin,
    softmax_last,
    square,
    total,
)
from course_utils.labs.case_inputs.inputs_sync import (  # noqa: F401
    FakeDevice,
    GeneratedLoop,
    TrainingRun,
    make_loop,
)
from course_utils.labs.case_inputs.inputs_trace import Watched, ops_seen  # noqa: F401
