"""The lesson map: one list that lesson 00, the README test and ``course start`` agree on."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Lesson:
    """One lesson: its number and file stem, title, what you learn, minutes, where it runs."""

    number: str
    slug: str
    title: str
    learn: str
    minutes: int
    runs_on: str


LESSONS = (
    Lesson("00", "start_here", "Start here", "the doctor, check(), hints, progress, emulated vs real",
           15, "any (nothing emulated)"),
    Lesson("01", "mps_setup", "MPS setup", "Metal vs MPS vs mps, the three states, one device "
           "choice, model and batch together", 30, "mps / cuda / cpu"),
    Lesson("02", "unified_memory", "Unified memory", "budget a training step, read allocator "
           "counters", 40, "mps / cuda / cpu (counters per device)"),
    Lesson("03", "sync_and_timing", "Sync and timing", "asynchronous execution, honest timing, "
           "hidden sync points", 40, "mps / cuda / cpu (async queue emulated)"),
    Lesson("04", "cpu_fallback", "CPU fallback", "trace ops that leave the device, count backend "
           "switches", 40, "mps / cpu (fallback emulated)"),
    Lesson("05", "non_contiguous_tensors", "Non-contiguous tensors", "shape, stride, offset; what "
           "layout costs", 45, "any"),
    Lesson("06", "addcmul_detective", "The addcmul_ detective story", "reproduce the frozen "
           "encoder, difftest and sentinel", 60, "mps / cpu (bug emulated)"),
    Lesson("07", "training_bugs", "Classic training bugs", "spot and fix the silent training bugs",
           60, "any"),
    Lesson("08", "interview_drills", "Interview drills and capstone", "timed drills, a haunted "
           "training script", 60, "mps / cpu (bugs emulated)"),
)


def stem(lesson: Lesson) -> str:
    """The notebook file stem shared by notebooks/, solutions/ and exercises/."""
    return f"{lesson.number}_{lesson.slug}"


def lesson_map(available: set[str] | None = None) -> str:
    """The lessons as a text table; ``available`` marks which notebooks exist yet."""
    rows = [f"{'NN':<3} {'lesson':<30} {'min':>4}  {'runs on':<38} you learn"]
    for lesson in LESSONS:
        flag = "" if available is None or lesson.number in available else "  (coming)"
        rows.append(f"{lesson.number:<3} {lesson.title:<30} {lesson.minutes:>4}  "
                    f"{lesson.runs_on:<38} {lesson.learn}{flag}")
    return "\n".join(rows)
