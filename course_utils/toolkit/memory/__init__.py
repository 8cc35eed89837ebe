"""Memory you measure instead of guess (lesson 02).

One topic per module; everything public is re-exported here, so ``from course_utils.toolkit.memory
import X`` works for all of them:

- ``sizes``: what tensors cost, the one place bytes are counted: ``tensor_bytes(shape, dtype)`` (a
  new contiguous tensor), ``storage_bytes(t)`` (what an existing tensor keeps alive),
  ``distinct_storage_bytes(tensors)`` (each storage once), ``mib``.
- ``saved``: the activations autograd saves for backward: ``SavedTensors``, ``saved_bytes``, and
  ``graph_saved_bytes`` (what the graphs behind kept outputs hold).
- ``counters``: ``snapshot`` (the counters each device really has, each labelled with what it
  counts; on CPU there is no allocator counter: we report the process) and ``empty_cache``.
- ``tracking``: ``tracking`` / ``measure``: peak and retained tensor bytes of a piece of work, on
  any device.
- ``budget``: ``training_step_breakdown``: weights, gradients, optimizer state and the activations
  autograd really saves, against the measured peak of one training step; the lesson's model
  ``TinyIssueClassifier``.
- ``oom``: ``retry_on_oom``: the correct version of a retry-on-out-of-memory helper (one that
  yields a second time cannot retry: lesson 02).
- ``watermarks``: ``WATERMARKS``, the MPS allocator's limits (R32 in references.md).
- ``pictures``: ``draw_memory_models`` and ``plot_breakdowns`` (matplotlib imported when called).

The lesson's exercise inputs (``SAVING_EXAMPLES``, ``SimulatedOOMStep``) live with every other case
input in ``course_utils.labs.case_inputs``.
"""

from course_utils.toolkit.memory.budget import (
    TOLERANCE,
    Breakdown,
    Part,
    TinyIssueClassifier,
    optimizer_state_bytes,
    training_step_breakdown,
)
from course_utils.toolkit.memory.counters import Counter, Snapshot, empty_cache, snapshot
from course_utils.toolkit.memory.oom import (
    MinBatchOutOfMemoryError,
    Retried,
    is_out_of_memory,
    retry_on_oom,
)
from course_utils.toolkit.memory.pictures import COLORS, draw_memory_models, plot_breakdowns
from course_utils.toolkit.memory.saved import Save, SavedTensors, graph_saved_bytes, saved_bytes
from course_utils.toolkit.memory.sizes import (
    MiB,
    distinct_storage_bytes,
    mib,
    storage_bytes,
    storage_key,
    tensor_bytes,
)
from course_utils.toolkit.memory.tracking import Measurement, Tracker, measure, tracking
from course_utils.toolkit.memory.watermarks import WATERMARKS, Watermark

__all__ = [
    "COLORS", "TOLERANCE", "WATERMARKS", "Breakdown", "Counter", "Measurement", "MiB",
    "MinBatchOutOfMemoryError", "Part", "Retried", "Save", "SavedTensors", "Snapshot",
    "TinyIssueClassifier", "Tracker", "Watermark", "distinct_storage_bytes", "draw_memory_models",
    "empty_cache", "graph_saved_bytes", "is_out_of_memory", "measure", "mib", "optimizer_state_bytes",
    "plot_breakdowns", "retry_on_oom", "saved_bytes", "snapshot", "storage_bytes", "storage_key",
    "tensor_bytes", "tracking", "training_step_breakdown",
]
