"""``course feedback release FEEDBACK HOME...``: the reverse of ``course collect``. Each learner's
feedback pages (``course grade --feedback FEEDBACK``) are copied into their own workspace, as
``workspace/feedback/<page>``, where JupyterLab shows them.

Learners are found exactly as ``course collect`` finds them (a home, or a folder of homes; the
same ``--strip-prefix``). Everything is written through folder descriptors opened without
following links, starting at the learner's home, so nothing lands outside it: a workspace or a
``feedback`` folder that is a link is refused, and a file already there is never overwritten
(it is reported, and kept). ``FEEDBACK/release-<time>.json`` records what went where.
"""

from __future__ import annotations

import errno
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from course_utils.core.errors import CourseError
from course_utils.instructor.collect import _DIR, _homes

_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(
    os, "O_CLOEXEC", 0)


@dataclass
class Release:
    """What a release copied (learner -> pages) and what it left out, and why."""

    copied: dict[str, list[str]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    record: Path | None = None


def _feedback_folder(workspace: int) -> int:
    """The descriptor of ``workspace/feedback``, made if missing; a link there is refused."""
    try:
        os.mkdir("feedback", 0o755, dir_fd=workspace)
    except FileExistsError:
        pass
    return os.open("feedback", _DIR, dir_fd=workspace)


def _copy_page(source: Path, folder: int) -> str | None:
    """Copy one page into ``folder``; None when copied, else why not."""
    data = source.read_bytes()
    try:
        fd = os.open(source.name, _NEW_FILE, 0o644, dir_fd=folder)
    except OSError as err:
        return "already there, kept" if err.errno == errno.EEXIST else f"not written ({err.strerror})"
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return None


def _release_one(learner: str, pages: list[str], feedback: Path, workspace: int, done: Release) -> None:
    try:
        folder = _feedback_folder(workspace)
    except OSError as err:
        reason = "is a link" if err.errno in (errno.ELOOP, errno.ENOTDIR) else err.strerror
        done.skipped.append(f"{learner}: workspace/feedback {reason}: nothing released")
        return
    try:
        for page in pages:
            why = _copy_page(feedback / page, folder)
            if why:
                done.skipped.append(f"{learner}: {Path(page).name} {why}")
            else:
                done.copied.setdefault(learner, []).append(Path(page).name)
    finally:
        os.close(folder)


def release(feedback: Path, homes: list[str], strip_prefix: str = "") -> Release:
    """Copy each learner's pages listed in ``feedback/feedback.json`` into their workspace."""
    index_path = feedback / "feedback.json"
    if not index_path.is_file():
        raise CourseError(f"{feedback}: no feedback.json here (make it with course grade ... "
                          f"--feedback {feedback})")
    learners: dict[str, list[str]] = json.loads(index_path.read_text())["learners"]
    for raw in homes:
        if not os.path.isdir(raw):
            raise CourseError(f"{raw}: not a folder (give learners' homes, or a folder of them)")
    done, found = Release(), {}
    for raw in homes:
        for folder_name, workspace in _homes(raw):
            try:
                learner = folder_name.removeprefix(strip_prefix) if strip_prefix else folder_name
                if learner in learners and learner not in found:
                    found[learner] = f"{raw}/{folder_name}"
                    _release_one(learner, learners[learner], feedback, workspace, done)
            finally:
                os.close(workspace)
    done.skipped += [f"{learner}: no home found among the paths given"
                     for learner in sorted(set(learners) - set(found))]
    record = {"released_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "homes": found,
              "copied": done.copied, "skipped": done.skipped}
    done.record = feedback / f"release-{time.strftime('%Y%m%d-%H%M%S')}.json"
    done.record.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    return done


def report(done: Release) -> str:
    """What ``course feedback release`` prints."""
    lines = [f"{learner}: {', '.join(pages)}" for learner, pages in sorted(done.copied.items())]
    lines += [f"skipped {why}" for why in done.skipped]
    lines.append(f"released feedback to {len(done.copied)} learner(s); record: {done.record}")
    return "\n".join(lines)


def latest_pages(workspace: Path) -> list[Path]:
    """The learner's feedback pages (``workspace/feedback/*.html``), newest first."""
    folder = workspace / "feedback"
    if not folder.is_dir() or folder.is_symlink():
        return []
    return sorted(folder.glob("feedback-*.html"), key=lambda p: p.name, reverse=True)
