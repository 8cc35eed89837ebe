"""Read what a submission's process reported, without ever blocking (``course grade``).

The grader creates the results file and keeps its own descriptor on it before the submission's
process starts; it reads through that descriptor, from the start, at most ``cap`` bytes within a
deadline, and only if it is a regular file. Whatever the submission later puts at that path (a
FIFO, a link to ``/dev/zero``, a huge file) is never opened by the grader.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path


def read_results(path: Path, cap: int, deadline_s: float = 10.0) -> tuple[list[dict], str | None]:
    """The JSON lines in the results file at ``path`` (a regular file, not followed if a link),
    reading at most ``cap`` bytes: a FIFO or a device put there is refused, never waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return [], None
    try:
        return read_results_fd(fd, cap, deadline_s)
    finally:
        os.close(fd)


def read_results_fd(fd: int, cap: int, deadline_s: float = 10.0) -> tuple[list[dict], str | None]:
    """The JSON lines of an open results file, from its start: at most ``cap`` bytes, for at most
    ``deadline_s`` seconds, and only if it is a regular file."""
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        return [], "its results file was replaced by something that is not a regular file"
    chunks, size, end = [], 0, time.monotonic() + deadline_s
    while size <= cap and time.monotonic() < end:
        data = os.pread(fd, min(1 << 20, cap + 1 - size), size)
        if not data:
            break
        chunks.append(data)
        size += len(data)
    raw, problem = b"".join(chunks), None
    if len(raw) > cap:
        raw, problem = raw[:cap], f"its results exceed {cap // 2**20} MB; the rest was ignored"
    elif time.monotonic() >= end:
        problem = f"its results could not be read within {deadline_s:g} s; the rest was ignored"
    records = []
    for line in raw.decode("utf-8", errors="replace").splitlines():
        try:
            item = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(item, dict):
            records.append(item)
    return records, problem
