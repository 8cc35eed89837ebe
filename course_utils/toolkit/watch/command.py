"""``course watch script.py [args...]``: run an unmodified training script under the watcher.

The script runs as ``__main__`` (``runpy``) with ``sys.argv`` set to the script and its arguments
and its folder first on ``sys.path``, exactly as ``python script.py args`` would. Its output goes
where it always goes; the watcher writes to stderr, findings as they appear and a report at exit,
also when the script raises or calls ``sys.exit``. The exit code is the script's.
"""

from __future__ import annotations

import argparse
import atexit
import os
import runpy
import sys
import traceback
from pathlib import Path


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="course watch",
        description="Run a training script unmodified and "
        "report silent training bugs: what, where (your line), why, the fix.",
    )
    p.add_argument("--json", metavar="PATH", help="also write the findings as JSON here")
    p.add_argument("--html", metavar="PATH", help="also write the findings as an HTML page here")
    p.add_argument(
        "--deep-every",
        type=int,
        metavar="N",
        default=None,
        help="watch every Nth step op by op (default: sampled, ~2%% of the run)",
    )
    p.add_argument("--quiet", action="store_true", help="only the report at exit")
    p.add_argument("script", help="the training script")
    p.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return p


def _exit_code(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run(
    script: str,
    args: list[str],
    *,
    json_path: str | None = None,
    html_path: str | None = None,
    deep_every: int | None = None,
    quiet: bool = False,
) -> int:
    """Run ``script`` with ``args`` under a ``Watcher``; returns the script's exit code."""
    from course_utils.toolkit.watch.render import as_html, as_json, console
    from course_utils.toolkit.watch.watcher import Watcher

    path = Path(script)
    if not path.is_file():
        print(f"course watch: no such script: {script}", file=sys.stderr)
        return 2
    watcher = Watcher(verbose=not quiet, deep_every=deep_every)
    pid, done = os.getpid(), []

    def finish(code: int) -> None:
        if done or os.getpid() != pid:  # once, and never in a forked DataLoader worker
            return
        done.append(code)
        watcher.uninstall()
        sys.stdout.flush()
        print(console(watcher), file=sys.stderr, flush=True)
        meta = {"script": str(path), "args": args, "exit_code": code}
        if json_path:
            Path(json_path).write_text(as_json(watcher, **meta), encoding="utf-8")
        if html_path:
            Path(html_path).write_text(as_html(watcher, f"course watch {path.name}"), encoding="utf-8")

    old_argv, old_path = sys.argv[:], sys.path[:]
    sys.argv = [str(path), *args]
    sys.path.insert(0, str(path.resolve().parent))
    atexit.register(lambda: finish(0))  # if the script ends the process some other way
    code = 0
    watcher.install()
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit as stop:
        code = _exit_code(stop.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        code = 130
    except BaseException:  # noqa: BLE001 - the script's own error, shown as Python shows it
        traceback.print_exc()
        code = 1
    finally:
        finish(code)
        sys.argv, sys.path[:] = old_argv, old_path
    return code


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return run(
        args.script,
        args.args,
        json_path=args.json,
        html_path=args.html,
        deep_every=args.deep_every,
        quiet=args.quiet,
    )
