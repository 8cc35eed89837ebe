"""Run one command where the course's references do not exist (``course grade``, Linux).

Run by path, like ``supervise.py`` (standard library only, no course package, no torch):

    python -E -s jail.py SPEC.json -- COMMAND...

It puts COMMAND in new user, mount, PID and network namespaces:

- every folder in ``hide`` (the course checkout, the class folders, the gradebook's folder, the
  folder of the grading runs, ``/tmp`` included) is covered by an empty, read-only tmpfs; the
  folders in ``keep`` that lie inside one (the Python environment, the submission's work folder,
  the bank-less copy of ``course_utils``) are mounted back;
- with ``read_only`` every mount is then made read-only but the work folder (``$HOME``, the
  interpreter and its standard library included), or the jail is not built;
- a fresh ``/proc`` shows only the jail's own processes: the grader, the supervisor and every
  other process of the machine have no PID in there, so they can be neither found nor signalled,
  and ``/proc/PID/root`` cannot lead back to the real file system;
- there is no network (a new network namespace with its loopback down);
- the capability bounding set is emptied and ``no_new_privs`` set before COMMAND starts, so it has
  no capability at all and cannot unmount what covers the references.

Three processes: the one the supervisor started stays outside the new PID namespace and waits;
inside, PID 1 (a few lines of this file, deaf to signals sent from inside) reaps orphans and
reports how COMMAND ended; COMMAND itself runs as PID 2, an ordinary process (its own signals,
parent and group behave as anywhere). The outside process then ends the way COMMAND ended (same
exit code or signal), and the kernel kills whatever is left in the namespace. ``--probe`` checks
that all of this works here.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import re
import signal
import sys

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 24, 38
O_PATH = getattr(os, "O_PATH", 0o10000000)
SETUP_FAILED = 75  # the exit code when the jail could not be built (the command never ran)
QUIET = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
         signal.SIGALRM, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU)  # PID 1 ignores these
NEVER_HIDDEN = {"/", "/usr", "/etc", "/lib", "/lib64", "/bin", "/sbin", "/proc", "/sys", "/dev",
                "/var", "/run", "/opt"}
ATIME = {"noatime": 1024, "nodiratime": 2048, "relatime": 1 << 21}
KEPT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, **ATIME}

_libc = None


class JailError(OSError):
    """A step of building the jail failed (the command is not run)."""


def _c():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_void_p]
    return _libc


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise JailError(err, f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None):
    def enc(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    _check(_c().mount(enc(source), enc(target), enc(fstype), flags,
                      None if data is None else ctypes.c_char_p(data.encode())), f"mount {target}")


def _write(path: str, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _map_ids(uid: int, gid: int) -> None:
    """Inside the new user namespace we are who we were outside (one id each)."""
    try:
        _write("/proc/self/setgroups", "deny")
    except OSError:
        pass
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")


def _cover(hide: list[str], keep: list[str], writable: list[str]) -> None:
    """Empty read-only tmpfs over each hidden folder; kept folders inside one mounted back."""
    hide = sorted({os.path.realpath(h) for h in hide if os.path.isdir(h)} - NEVER_HIDDEN)
    keep = sorted({os.path.realpath(k) for k in keep if os.path.exists(k)})
    back = [k for k in keep if any(_inside(k, h) for h in hide)]
    fds = {k: os.open(k, O_PATH | os.O_CLOEXEC) for k in back}  # reachable after the cover
    for folder in hide:
        if any(_inside(folder, h) and folder != h for h in hide):
            continue  # already under a hidden folder
        _mount("none", folder, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,nr_inodes=256,mode=0755")
        for kept in back:
            if _inside(kept, folder):
                target = kept
                if os.path.isdir(f"/proc/self/fd/{fds[kept]}"):
                    os.makedirs(target, exist_ok=True)
                else:
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    open(target, "a").close()
                _mount(f"/proc/self/fd/{fds[kept]}", target, None, MS_BIND | MS_REC)
                if not any(_inside(kept, w) for w in writable):
                    _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        _mount(None, folder, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, "size=64k,mode=0755")
    for folder in hide:  # hidden inside a folder mounted back (a package installed in the environment)
        if any(_inside(folder, k) and folder != k for k in back) and os.path.isdir(folder):
            _mount("none", folder, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k,mode=0555")
    for fd in fds.values():
        os.close(fd)


def _mounts() -> list[tuple[str, int]]:
    """Every mount point of this namespace (parents first) and the flags it must keep."""
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
        for line in fh:
            fields = line.split()
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
            options = fields[5].split(",")
            flags = sum(KEPT_FLAGS[o] for o in options if o in KEPT_FLAGS)
            found.append((point, flags if any(o in ATIME for o in options) else flags | (1 << 24)))
    return found


def _read_only(writable: list[str]) -> None:
    """Every mount read-only but the writable folders (bound onto themselves first, so each is a
    mount of its own) and /proc; a mount that cannot be made read-only stops the jail."""
    for folder in writable:
        _mount(folder, folder, None, MS_BIND | MS_REC)
    for point, flags in _mounts():
        if _inside(point, "/proc") or any(_inside(point, w) for w in writable):
            continue
        try:
            _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
        except JailError as err:
            if err.errno not in (errno.EINVAL, errno.ENOENT):  # covered since: not a mount point here
                raise


def _drop_privileges() -> None:
    """No capability survives the exec, and none can be gained again (no_new_privs)."""
    libc = _c()
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            if ctypes.get_errno() == 22:  # EINVAL: past the last capability this kernel knows
                break
            raise JailError(ctypes.get_errno(), f"cannot drop capability {cap}")
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def _become_init(spec: dict) -> None:
    """In the child, PID 1 of the new namespace: die with the waiting parent, build the view."""
    _check(_c().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _cover(spec.get("hide", []), spec.get("keep", []), spec.get("writable", []))
    if spec.get("read_only"):
        _read_only([os.path.realpath(w) for w in spec.get("writable", [])])
    _drop_privileges()


def _mirror(status: int) -> int:
    """End this process the way the command ended (a signal death stays one)."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        return 128 + sig
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else SETUP_FAILED


def _wait_outside(init: int, report: int) -> int:
    """The parent outside: wait for PID 1, then end as the command did (PID 1 reports how)."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda s, _f: os.kill(init, signal.SIGKILL))
    while True:
        try:
            _, status = os.waitpid(init, 0)
            break
        except ChildProcessError:
            return SETUP_FAILED
        except InterruptedError:
            continue
    reported = os.read(report, 64).decode(errors="replace").strip()
    return _mirror(int(reported) if reported.isdigit() else status)


def _init(command: int, report: int) -> None:
    """PID 1 inside: reap every process until the command ends, report its wait status, leave (the
    kernel then ends whatever is left in the namespace). Signals from inside cannot stop it."""
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(SETUP_FAILED)
        except InterruptedError:
            continue
        if pid == command:
            os.write(report, str(status).encode())
            os._exit(0)


def enter(spec: dict) -> int:
    """Build the namespaces, then fork twice: outside, the parent waits and returns the exit code
    to leave with; inside, PID 1 (``_init``) never returns; its child, the command's process (PID
    2, an ordinary process: its signals, its parent, its group behave as anywhere), returns -1 to
    be exec'd by the caller."""
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | (CLONE_NEWNET if spec.get("no_network", True) else 0)
    _check(_c().unshare(flags), "unshare")
    _map_ids(uid, gid)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    read, write = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write)
        return _wait_outside(pid, read)
    try:
        os.close(read)
        _become_init(spec)
        for sig in QUIET:
            signal.signal(sig, signal.SIG_IGN)
        command = os.fork()
    except BaseException as err:  # noqa: BLE001 - report and leave; the command must not run unjailed
        os.write(2, f"jail: {err}\n".encode(errors="replace"))
        os._exit(SETUP_FAILED)
    if command:
        _init(command, write)
    os.close(write)
    for sig in (*QUIET, signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    return -1


PROBE = ("import os, sys\n"
         "def writes(d):\n"
         "    try:\n"
         "        open(os.path.join(d, '.probe'), 'w').close()\n"
         "        return True\n"
         "    except OSError:\n"
         "        return False\n"
         "sys.exit(0 if os.getppid() == 1 and not any(map(os.path.lexists, sys.argv[1:])) and not any("
         "map(writes, (sys.prefix, os.path.dirname(os.__file__), os.path.expanduser('~')))) else 1)")


def main(argv: list[str]) -> int:
    """``jail.py SPEC.json -- COMMAND...``, or ``jail.py --probe HIDE... -- GONE...``: does a
    jailed Python run under the jail's init without seeing the files GONE once HIDE is covered?"""
    if argv[1:2] == ["--probe"]:
        split = argv.index("--")
        python = [sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))]
        spec = {"hide": argv[2:split], "keep": python, "read_only": True}
        command = [sys.executable, "-I", "-c", PROBE, *argv[split + 1:]]
    else:
        split = argv.index("--")
        with open(argv[1], encoding="utf-8") as fh:
            spec = json.load(fh)
        command = argv[split + 1:]
    try:
        code = enter(spec)
    except Exception as err:  # noqa: BLE001 - any failure to build it: the command does not run
        os.write(2, f"jail: {err}\n".encode(errors="replace"))
        return SETUP_FAILED
    if code >= 0:
        return code
    try:
        os.execv(command[0], command)
    except OSError as err:
        os.write(2, f"jail: cannot start {command[0]}: {err}\n".encode(errors="replace"))
    os._exit(SETUP_FAILED)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
