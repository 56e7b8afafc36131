"""The reward guard: runs a reward-writing grader (Harbor's ``test.sh``) so that only its own reward counts.

The grader runs the agent's code as the same user in the same sandbox, so that code could leave a reward
the grader's own write cannot replace. The guard is the verify command's first process inside the sandbox
(``guarded_command``: ``python3 -I -S -c <this file>``; it imports only the standard library, since the
project is not importable there). It makes itself the subreaper of everything the grader starts and not
dumpable (no process of the run can trace it or read its memory), notes its own resource limits (the
grader starts with them), runs the grader, and when the grader ends, in this order:

1. refuses a grader that a signal ended (``kill -9`` from the agent's code after it planted a reward);
2. refuses when a resource limit of the grader (read from its ``/proc/<pid>/limits`` once it has ended,
   before it is reaped) or of the guard itself (once every other process is stopped; a process it cannot
   list for a lowered limit is refused as unstoppable) is lower than when the grader started, soft or
   hard: any process of the same user may lower another's limits (``prlimit(2)``, which neither
   non-dumpability nor ptrace rules stop), and the agent's code, having planted a reward, lowers the
   grader's ``RLIMIT_NOFILE`` so that its own ``echo 0 > reward.txt`` cannot open the file and fails
   without a signal. The price: a grader that lowers its own limits (``ulimit -t 10`` at its top level)
   is refused too, and must lower them only for the command that needs it (``(ulimit -t 10; python
   ...)``);
3. kills every process the grader left (none may write after this check) and refuses when one of them
   was alive at or after the reward's last change: a process still running when the grader ended, or an
   orphan (its parent gone, e.g. a daemon the agent's code forked) that ended at or after the ctime of
   the reward files. ctime cannot be set back and the kernel's coarse clock never runs ahead of
   ``time.time()``, so an orphan that wrote the reward's last content is caught (unless the grader itself
   changes only the files' metadata afterwards). The price: a grader that leaves a process running when
   it ends, or has a daemon (a service that forks into the background, a build daemon) running when it
   writes its reward, is refused too, and must stop it first;
4. refuses a reward whose folder or files are not what a normal write leaves: a link anywhere on the path
   below the mount, not a folder or regular file, or a mode that stops its owner writing (a read-only
   reward file or folder, which the grader's own later write could not replace).

Its exit status is the only verdict the host reads (``refusal``): 0 when nothing was refused, its own codes
otherwise; any other status (the guard itself was killed) is refused too. Processes of the run cannot
forge it: signals end it (a status it never returns), and it is not dumpable. What it prints (one line on
stderr) is a detail only. What it cannot see: a process the grader itself reaps (the grader ran the agent's
code in the background and stopped it only after writing its reward; the seventh check's
``planted_reward`` attempt rejects such graders), the limits of a process below the grader that writes
the reward itself (``python grade.py``, whose limits the agent's code it runs lowers: the grader has
reaped it when the guard looks; the ``planted_reward_lowers_file_limit`` attempt rejects such graders),
code running inside a grader process that writes the reward itself (in-process judging), and tracing of
the grader's own processes, which are dumpable.
"""

from __future__ import annotations

import functools
import os
import shlex
import signal
import stat
import sys
import time
from pathlib import Path

OK = 0
REWARD_CHANGED = 3
"""The reward's folder or files are not what a normal write leaves (link, other type, read-only)."""
OUTLIVED = 4
"""A process of the run was alive at or after the reward's last change, besides the grader itself."""
UNSTOPPABLE = 5
"""Processes the grader left could not all be stopped."""
SETUP_FAILED = 6
"""The guard could not make itself the subreaper (no ctypes or prctl): judging itself failed."""
NO_PYTHON = 7
"""No ``python3`` on the verifier's PATH to run the guard: judging itself failed."""
LIMITS_LOWERED = 8
"""A resource limit of the grader or of the guard was lowered during the run (or could not be read)."""
SIGNALED = 64
"""Plus the signal's number: the grader was ended by that signal."""
REWARD_FILES = ("reward.txt", "reward.json")
DETAIL_PREFIX = "reward guard: "
_PR_SET_DUMPABLE, _PR_SET_CHILD_SUBREAPER = 4, 36
_STOP_ROUNDS = 200
_FOLDER_BITS = (stat.S_IWUSR | stat.S_IXUSR, stat.S_IWGRP | stat.S_IXGRP, stat.S_IWOTH | stat.S_IXOTH)
_FILE_BITS = (stat.S_IWUSR, stat.S_IWGRP, stat.S_IWOTH)
UNLIMITED = 2**64 - 1
"""``RLIM_INFINITY``: what ``/proc/<pid>/limits`` prints as ``unlimited``."""
LIMIT_NAMES = {
    "Max cpu time": "CPU",
    "Max file size": "FSIZE",
    "Max data size": "DATA",
    "Max stack size": "STACK",
    "Max core file size": "CORE",
    "Max resident set": "RSS",
    "Max processes": "NPROC",
    "Max open files": "NOFILE",
    "Max locked memory": "MEMLOCK",
    "Max address space": "AS",
    "Max file locks": "LOCKS",
    "Max pending signals": "SIGPENDING",
    "Max msgqueue size": "MSGQUEUE",
    "Max nice priority": "NICE",
    "Max realtime priority": "RTPRIO",
    "Max realtime timeout": "RTTIME",
}
"""The rows of ``/proc/<pid>/limits`` by the ``RLIMIT_`` name they show (a row not listed keeps its own)."""
Limits = dict[str, tuple[int, int]]


# ---- pure checks (also used inside the sandbox) ----


def signal_problem(status: int) -> tuple[int, str] | None:
    """The grader's wait status: (code, why) when a signal ended it, else None (any exit code is fine)."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        return SIGNALED + number, f"the grader was ended by signal {number} before it finished"
    return None


def entry_problem(name: str, st: os.stat_result | None, *, folder: bool, uid: int, gids: set[int]) -> str:
    """Why the ``lstat`` result ``st`` of ``name`` is not what a normal write leaves, else "": a folder
    the guard's user may enter and write in, or a regular file it may write (the mode bits that apply to
    ``uid``/``gids``, as the kernel checks them for a user without privileges). ``None``: missing."""
    if st is None:
        return ""
    kind = "folder" if folder else "regular file"
    if stat.S_ISLNK(st.st_mode):
        return f"{name} is a link, not a {kind}"
    if folder != stat.S_ISDIR(st.st_mode) or not (folder or stat.S_ISREG(st.st_mode)):
        return f"{name} is not a {kind}"
    owner, group, other = _FOLDER_BITS if folder else _FILE_BITS
    bits = owner if st.st_uid == uid else group if st.st_gid in gids else other
    if st.st_mode & bits != bits:
        return f"{name} is read-only (mode {stat.S_IMODE(st.st_mode):o}); a normal write leaves it writable"
    return ""


def parse_limits(text: str) -> Limits:
    """``/proc/<pid>/limits`` as {name: (soft, hard)}: the ``RLIMIT_`` name without its prefix
    (``LIMIT_NAMES``), ``unlimited`` as ``UNLIMITED``. A row that cannot be read is left out."""
    limits: Limits = {}
    for line in text.splitlines()[1:]:
        words = line.split()
        at = next((i for i, w in enumerate(words) if w.isdigit() or w == "unlimited"), None)
        if not at or len(words) < at + 2:
            continue
        values = [
            UNLIMITED if w == "unlimited" else int(w) if w.isdigit() else None for w in words[at : at + 2]
        ]
        if None in values:
            continue
        name = " ".join(words[:at])
        limits[LIMIT_NAMES.get(name, name)] = (values[0], values[1])
    return limits


def _shown(value: int) -> str:
    return "unlimited" if value == UNLIMITED else str(value)


def lowered_limits(before: Limits, after: Limits) -> list[str]:
    """Each limit of ``before`` that ``after`` lowers or lacks: ``NOFILE 1024 -> 3`` (the soft limit),
    ``NOFILE hard 4096 -> 1024``, ``NOFILE unreadable``; none when ``after`` keeps or raises them all."""
    found = []
    for name, (soft, hard) in before.items():
        if name not in after:
            found.append(f"{name} unreadable")
            continue
        new_soft, new_hard = after[name]
        if new_soft < soft:
            found.append(f"{name} {_shown(soft)} -> {_shown(new_soft)}")
        if new_hard < hard:
            found.append(f"{name} hard {_shown(hard)} -> {_shown(new_hard)}")
    return found


def limits_problem(who: str, before: Limits, after: Limits | None) -> str:
    """Why the limits ``who`` ended with (``after``; None: they could not be read) are not those it
    started with (``before``), else "": a lowered limit could have made its own reward write fail."""
    if after is None or (before and not after):
        return f"{who}'s resource limits could not be read when it ended"
    lowered = lowered_limits(before, after)
    if lowered:
        return f"{who}'s resource limits were lowered during its run: {', '.join(lowered)}"
    return ""


def late_problem(orphans_ended: list[float], alive_at_end: list[str], last_change: float | None) -> str:
    """Why a process other than the grader could have written the reward, else "": one was still alive
    when the grader ended (``alive_at_end``: their names), or an orphan ended at or after the reward's last
    change (``last_change``, the newest ctime of the reward files; None: there is no reward, nothing to
    protect)."""
    if last_change is None:
        return ""
    if alive_at_end:
        names = ", ".join(sorted(set(alive_at_end))[:3])
        return f"{len(alive_at_end)} process(es) the grader started still ran after it ended ({names})"
    late = [t for t in orphans_ended if t >= last_change]
    if late:
        return (
            f"{len(late)} process(es) that outlived their parent (a daemon) still ran when the reward was "
            "last written"
        )
    return ""


def reward_state_problem(base: str, rel: str, *, uid: int, gids: set[int]) -> str:
    """What ``entry_problem`` says of each folder from ``base`` down to ``base/rel`` and of the reward
    files in it, read with ``lstat`` (never through a link); "" when all is as a normal write leaves it."""
    path, parts = base, [p for p in rel.split("/") if p]
    for number, part in enumerate(parts):
        path = os.path.join(path, part)
        st = _lstat(path)
        last = number == len(parts) - 1
        problem = entry_problem(path, st, folder=True, uid=uid, gids=gids)
        if problem and (last or "read-only" not in problem):  # only the reward's own folder must be writable
            return problem
        if st is None:
            return ""
    for name in REWARD_FILES:
        file = os.path.join(path, name)
        problem = entry_problem(file, _lstat(file), folder=False, uid=uid, gids=gids)
        if problem:
            return problem
    return ""


def last_reward_change(folder: str) -> float | None:
    """The newest ctime of the reward files in ``folder`` (whatever their type), None when there is none."""
    times = [st.st_ctime for st in (_lstat(os.path.join(folder, n)) for n in REWARD_FILES) if st is not None]
    return max(times) if times else None


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


# ---- the guard's run (inside the sandbox) ----


def read_limits(pid: int | str) -> Limits | None:
    """The resource limits of process ``pid`` (``"self"``: the guard's), None when they cannot be read
    (a zombie not yet reaped still has them)."""
    try:
        with open(f"/proc/{pid}/limits") as handle:
            limits = parse_limits(handle.read())
    except (OSError, ValueError):
        return None
    return limits or None


def descendants(root: int) -> list[int]:
    """Every process below ``root`` (zombies included), from ``/proc``. Raises ``OSError`` when a process's
    entry cannot be read for another reason than its end (``EMFILE``: a process of the run lowered the
    guard's open-file limit), so that no process is missed."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (FileNotFoundError, ProcessLookupError, ValueError, IndexError):  # it ended meanwhile
            continue
        children.setdefault(ppid, []).append(int(name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def stop_descendants(me: int) -> list[str] | None:
    """Kill and reap every process below ``me``; return the names of those there were at first, None if
    some survived every round."""
    first = None
    for _ in range(_STOP_ROUNDS):
        pids = descendants(me)
        first = [_name(pid) for pid in pids] if first is None else first
        if not pids:
            return first
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        while True:  # the killed processes' children become this subreaper's: reap what has ended
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        time.sleep(0.001)
    return None


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as handle:
            return handle.read().strip() or "?"
    except OSError:
        return "?"


def _prctl(option: int, value: int) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}, {value})")


def _say(code: int, why: str) -> int:
    if why:
        sys.stderr.write(f"{DETAIL_PREFIX}{why}\n")
        sys.stderr.flush()
    return code


def main(argv: list[str]) -> int:
    """``argv``: [program, base, rel, command]; the reward folder is ``base/rel``."""
    base, rel, command = argv[1], argv[2], argv[3]
    try:
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
        _prctl(_PR_SET_DUMPABLE, 0)
    except (ImportError, OSError, AttributeError) as exc:
        return _say(SETUP_FAILED, f"cannot guard the reward ({type(exc).__name__}: {exc})")
    start = read_limits("self")  # the grader starts with the guard's limits (fork and exec keep them)
    if start is None:
        return _say(SETUP_FAILED, "cannot guard the reward: /proc/self/limits cannot be read")
    child = os.fork()
    if child == 0:  # the grader, with the signal dispositions Python changed put back
        try:
            for number in (signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(number, signal.SIG_DFL)
            os.execvp("bash", ["bash", "-c", command])
        finally:
            os._exit(127)
    orphans_ended: list[float] = []
    while True:  # look at whatever ended before reaping it: the grader's limits are read while a zombie
        pid = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT).si_pid
        if pid == child:
            ended = read_limits(child)
            status = os.waitpid(child, 0)[1]
            break
        os.waitpid(pid, 0)
        orphans_ended.append(time.time())
    try:
        alive = stop_descendants(os.getpid())
    except OSError as exc:
        return _say(UNSTOPPABLE, f"the processes the grader left could not be listed ({exc})")
    if alive is None:
        return _say(UNSTOPPABLE, "processes the grader left could not be stopped")
    killed = signal_problem(status)
    if killed:
        return _say(*killed)
    # the guard's own, once no other process is left to lower them (or raise them back)
    lowered = limits_problem("the grader", start, ended) or limits_problem(
        "the reward guard", start, read_limits("self")
    )
    if lowered:
        return _say(LIMITS_LOWERED, lowered)
    uid, gids = os.getuid(), {os.getgid(), *os.getgroups()}
    folder = os.path.join(base, rel)
    late = late_problem(orphans_ended, alive, last_reward_change(folder))
    if late:
        return _say(OUTLIVED, late)
    changed = reward_state_problem(base, rel, uid=uid, gids=gids)
    return _say(REWARD_CHANGED, changed) if changed else OK


# ---- the host's side ----


def guard_paths(mounts: tuple, reward_dir: str) -> tuple[str, str]:
    """(base, rel) of the run's reward folder ``reward_dir`` (relative to the run's tree) as the sandbox
    sees it: under the mount whose source holds it (``.harbor/logs/verifier`` -> ``/logs``,
    ``verifier``), else under the work directory, where commands start."""
    for mount in mounts:
        if reward_dir == mount.source or reward_dir.startswith(mount.source + "/"):
            return mount.target, reward_dir[len(mount.source) :].strip("/")
    return ".", reward_dir


def guarded_command(command: str, base: str, rel: str) -> str:
    """``command`` run by the guard (``python3 -I -S``: no environment, site or work directory on its
    path, so no file of the run is imported); status ``NO_PYTHON`` where there is no ``python3``."""
    args = " ".join(shlex.quote(a) for a in (_source(), base, rel, command))
    return f"command -v python3 >/dev/null 2>&1 || exit {NO_PYTHON}; exec python3 -I -S -c {args}"


@functools.cache
def _source() -> str:
    return Path(__file__).read_text(encoding="utf-8")


def refusal(exit_code: int | None, output_tail: str) -> tuple[bool, str] | None:
    """The guard's verdict from the run's exit status: None when nothing was refused, else
    (judging itself failed, why). The line the guard printed, if any, is added as a detail."""
    if exit_code == OK:
        return None
    details = [line for line in output_tail.splitlines() if line.startswith(DETAIL_PREFIX)]
    detail = f" ({details[-1].removeprefix(DETAIL_PREFIX)[:200]})" if details else ""
    if exit_code in (SETUP_FAILED, NO_PYTHON):
        what = "no python3 on the verifier's PATH" if exit_code == NO_PYTHON else "it could not start"
        return True, f"the reward guard cannot run the grader: {what}{detail}"
    if exit_code is not None and SIGNALED < exit_code <= SIGNALED + 64:
        return False, f"the grader was ended by signal {exit_code - SIGNALED}: its reward does not count"
    reasons = {
        REWARD_CHANGED: "the reward is not as the grader's own write leaves it",
        OUTLIVED: "a process other than the grader could have written the reward",
        UNSTOPPABLE: "processes the grader left could not be stopped",
        LIMITS_LOWERED: "resource limits were lowered while the grader ran (its own write could fail)",
    }
    if exit_code in reasons:
        return False, f"{reasons[exit_code]}: the reward does not count{detail}"
    return False, (
        f"the verify run ended with status {exit_code}, not through its reward guard (a process of the run "
        "killed it, or it failed): the reward does not count"
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv))
