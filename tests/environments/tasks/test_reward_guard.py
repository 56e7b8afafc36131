"""The reward guard (``reward_guard``): a Harbor grader's reward counts only when the grader itself wrote it.

Pure checks first (no sandbox); then each mechanism the red team used, run by a small Harbor grader in
the local sandbox: the agent's program plants the full reward and makes it read-only, plants it and kills
the grader, lowers the grader's (or the guard's) open-file limit so that its own write fails, forks a
daemon that rewrites it, or links the reward folder elsewhere. Each must pay nothing, with the reason
named; graders that do nothing of the kind still pass.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from environments.core.runner import SubprocessRunner
from environments.core.types import CommandOracle
from environments.tasks import reward_guard as guard
from environments.tasks.harbor import MOUNTS, load_harbor_task
from environments.tasks.oracle import Verdict, read_reward, verify, write_start
from tests.environments.tasks.taskutil import repo_task
from tests.environments.tasks.test_harbor import local_runner, make_harbor_task

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
UID, GIDS = 1000, {1000}


def _st(mode: int, uid: int = UID, gid: int = UID, ctime: float = 0.0) -> os.stat_result:
    return os.stat_result((mode, 0, 0, 1, uid, gid, 0, 0, 0, ctime))


# ---- pure checks ----


def test_only_a_grader_ended_by_a_signal_is_refused_whatever_its_exit_code():
    assert guard.signal_problem(9) == (
        guard.SIGNALED + 9,
        "the grader was ended by signal 9 before it finished",
    )
    assert guard.signal_problem(19) is not None
    for code in (0, 1, 137):  # `exit 137` is an exit code, not a signal
        assert guard.signal_problem(code << 8) is None


@pytest.mark.parametrize(
    ("st", "folder", "problem"),
    [
        (_st(stat.S_IFREG | 0o644), False, ""),
        (_st(stat.S_IFREG | 0o600), False, ""),
        (None, False, ""),  # missing: nothing to refuse
        (_st(stat.S_IFREG | 0o444), False, "read-only (mode 444)"),
        (_st(stat.S_IFLNK | 0o777), False, "is a link"),
        (_st(stat.S_IFIFO | 0o644), False, "not a regular file"),
        (_st(stat.S_IFDIR | 0o755), False, "not a regular file"),
        (_st(stat.S_IFDIR | 0o755), True, ""),
        (_st(stat.S_IFDIR | 0o555), True, "read-only (mode 555)"),
        (_st(stat.S_IFDIR | 0o655), True, "read-only"),  # writable but not enterable
        (_st(stat.S_IFLNK | 0o777), True, "is a link, not a folder"),
        (_st(stat.S_IFREG | 0o644), True, "not a folder"),
        (_st(stat.S_IFDIR | 0o777, uid=0, gid=0), True, ""),  # Docker's bound /logs: open to all
        (_st(stat.S_IFDIR | 0o755, uid=0, gid=0), True, "read-only"),  # someone else's, closed to us
        (_st(stat.S_IFDIR | 0o575, uid=0, gid=UID), True, ""),  # our group's bits apply
    ],
)
def test_an_entry_must_be_what_a_normal_write_leaves(st, folder, problem):
    found = guard.entry_problem("x", st, folder=folder, uid=UID, gids=GIDS)
    assert (problem in found and bool(found)) if problem else found == "", found


def test_a_process_alive_at_or_after_the_rewards_last_change_is_refused():
    assert guard.late_problem([5.0], ["python3"], None) == ""  # no reward: nothing to protect
    assert "still ran after it ended (python3, sleep)" in guard.late_problem([], ["python3", "sleep"], 10.0)
    assert guard.late_problem([9.0, 9.99], [], 10.0) == ""  # orphans that ended before the last write
    assert "outlived their parent" in guard.late_problem([9.0, 10.0], [], 10.0)
    assert "1 process(es)" in guard.late_problem([9.0, 12.5], [], 10.0)


LIMITS_TEXT = """Limit                     Soft Limit           Hard Limit           Units     
Max cpu time              unlimited            unlimited            seconds   
Max core file size        0                    unlimited            bytes     
Max open files            1024                 1048576              files     
Max nice priority         0                    0                    
Max realtime timeout      unlimited            unlimited            us        
Max future thing          7                    9                    things    
"""


def test_the_limits_table_is_read_by_rlimit_name_with_unlimited_as_rlim_infinity():
    assert guard.parse_limits(LIMITS_TEXT) == {
        "CPU": (guard.UNLIMITED, guard.UNLIMITED),
        "CORE": (0, guard.UNLIMITED),
        "NOFILE": (1024, 1048576),
        "NICE": (0, 0),  # a row without units
        "RTTIME": (guard.UNLIMITED, guard.UNLIMITED),
        "Max future thing": (7, 9),  # a row this guard does not know keeps its own name
    }
    assert guard.parse_limits("Limit Soft Limit Hard Limit Units\nMax open files 12 x files\n") == {}
    assert guard.parse_limits("") == {}
    own = guard.read_limits("self")
    assert own is not None and len(own) >= 16 and own["NOFILE"][0] <= own["NOFILE"][1]
    assert guard.read_limits(2**22 + 7) is None  # no such process


def test_a_limit_lowered_soft_or_hard_or_gone_is_named_and_a_raised_one_is_not():
    before = {"NOFILE": (1024, 4096), "CPU": (guard.UNLIMITED, guard.UNLIMITED), "CORE": (0, 0)}
    assert guard.lowered_limits(before, before) == []
    raised = {
        "NOFILE": (4096, 4096),
        "CPU": (guard.UNLIMITED, guard.UNLIMITED),
        "CORE": (0, 0),
        "NEW": (1, 1),
    }
    assert guard.lowered_limits(before, raised) == []
    after = {"NOFILE": (3, 1024), "CPU": (10, guard.UNLIMITED)}
    assert guard.lowered_limits(before, after) == [
        "NOFILE 1024 -> 3",
        "NOFILE hard 4096 -> 1024",
        "CPU unlimited -> 10",
        "CORE unreadable",
    ]
    assert guard.limits_problem("the grader", before, before) == ""
    assert guard.limits_problem("the grader", before, {**before, "NOFILE": (3, 4096)}) == (
        "the grader's resource limits were lowered during its run: NOFILE 1024 -> 3"
    )
    assert "could not be read" in guard.limits_problem("the grader", before, None)
    assert "could not be read" in guard.limits_problem("the grader", before, {})


def test_the_reward_state_is_read_without_following_links(tmp_path):
    folder = tmp_path / "logs" / "verifier"
    folder.mkdir(parents=True)
    reward = folder / "reward.txt"
    reward.write_text("1\n")
    uid, gids = os.getuid(), {os.getgid()}

    def problem() -> str:
        return guard.reward_state_problem(str(tmp_path / "logs"), "verifier", uid=uid, gids=gids)

    assert problem() == ""
    assert guard.last_reward_change(str(folder)) == reward.stat().st_ctime
    assert guard.last_reward_change(str(tmp_path)) is None
    reward.chmod(0o444)
    assert "reward.txt is read-only" in problem()
    reward.chmod(0o644)
    folder.chmod(0o555)
    assert "verifier is read-only" in problem()
    folder.chmod(0o755)
    (tmp_path / "logs").chmod(0o555)  # only the reward's own folder must stay writable
    assert problem() == ""
    (tmp_path / "logs").chmod(0o755)
    reward.unlink()
    reward.symlink_to(tmp_path / "elsewhere")
    assert "reward.txt is a link" in problem()
    reward.unlink()
    reward.mkdir()
    assert "not a regular file" in problem()
    shutil.rmtree(folder)
    (tmp_path / "real").mkdir()
    folder.symlink_to(tmp_path / "real")
    assert "verifier is a link, not a folder" in problem()
    folder.unlink()
    assert problem() == ""  # no reward folder at all: no reward, nothing to refuse


def test_the_reward_folder_maps_through_the_mount_that_holds_it():
    assert guard.guard_paths(MOUNTS, ".harbor/logs/verifier") == ("/logs", "verifier")
    assert guard.guard_paths(MOUNTS, ".harbor/logs") == ("/logs", "")
    assert guard.guard_paths((), "out/reward") == (".", "out/reward")


def test_the_host_reads_only_the_guards_own_statuses_as_clean():
    assert guard.refusal(0, "") is None
    tail = "noise\nreward guard: /logs/verifier/reward.txt is read-only (mode 444)\n"
    failed, why = guard.refusal(guard.REWARD_CHANGED, tail)
    assert not failed and "not as the grader's own write leaves it" in why and "mode 444" in why
    assert guard.refusal(guard.SIGNALED + 9, "") == (
        False,
        "the grader was ended by signal 9: its reward does not count",
    )
    assert "outlived" not in guard.refusal(guard.OUTLIVED, "")[1]
    tail = "reward guard: the grader's resource limits were lowered during its run: NOFILE 1024 -> 3\n"
    failed, why = guard.refusal(guard.LIMITS_LOWERED, tail)
    assert not failed and "limits were lowered" in why and "NOFILE 1024 -> 3" in why
    for killed in (137, 143, 1, None):  # the guard itself was killed or crashed
        failed, why = guard.refusal(killed, "reward guard: forged by the agent")
        assert not failed and "not through its reward guard" in why and "forged" not in why
    assert guard.refusal(guard.NO_PYTHON, "")[0] and guard.refusal(guard.SETUP_FAILED, "")[0]


def test_the_guarded_command_runs_the_graders_command_through_python_in_isolated_mode():
    command = guard.guarded_command("bash /tests/test.sh", "/logs", "verifier")
    assert command.startswith(f"command -v python3 >/dev/null 2>&1 || exit {guard.NO_PYTHON}; ")
    assert "exec python3 -I -S -c " in command and command.endswith(" /logs verifier 'bash /tests/test.sh'")


def test_the_host_refuses_a_reward_folder_reached_through_a_link(tmp_path):
    scratch = tmp_path / "scratch"
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "reward.txt").write_text("1\n")
    (scratch / ".harbor" / "logs").mkdir(parents=True)
    (scratch / ".harbor" / "logs" / "verifier").symlink_to(tmp_path / "agent")
    with pytest.raises(ValueError, match="link at .harbor/logs/verifier"):
        read_reward(scratch / ".harbor" / "logs" / "verifier", below=scratch)
    with pytest.raises(ValueError, match="link"):
        read_reward(scratch / ".harbor" / "logs" / "verifier")
    shutil.rmtree(scratch / ".harbor")
    scratch.joinpath(".harbor").symlink_to(tmp_path / "agent")  # a link higher up the path
    with pytest.raises(ValueError, match="link at .harbor"):
        read_reward(scratch / ".harbor" / "logs" / "verifier", below=scratch)
    assert read_reward(tmp_path / "missing", below=tmp_path) is None


def test_a_plain_reward_oracle_is_guarded_without_a_sandbox_too(tmp_path):
    task = repo_task(oracle=CommandOracle("mkdir -p out && echo 1 > out/reward.txt", reward_dir="out"))
    run = verify(task, write_start(task, tmp_path / "p"), tmp_path / "v", SubprocessRunner())
    assert run.verdict is Verdict.PASS, run.reason
    task = repo_task(oracle=CommandOracle("exit 3", reward_dir="out"))
    run = verify(task, write_start(task, tmp_path / "p2"), tmp_path / "v2", SubprocessRunner())
    assert run.verdict is Verdict.FAIL and "wrote no reward" in run.reason


# ---- each mechanism, run by a Harbor grader in the sandbox ----

PLANT = (
    "import os\nos.makedirs('/logs/verifier', exist_ok=True)\n"
    "open('/logs/verifier/reward.txt', 'w').write('1\\n')\n"
)
KILL_ABOVE = """import signal
def above():
    chain, pid, session = [], os.getppid(), os.getsid(0)
    while pid > 1:
        with open(f'/proc/{pid}/stat') as handle:
            fields = handle.read().rsplit(')', 1)[1].split()
        if int(fields[3]) != session:
            break
        chain.append(pid)
        pid = int(fields[1])
    return chain
"""
DAEMON = """import os, time
if os.fork() == 0:
    os.setsid()
    null = os.open('/dev/null', os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    if os.fork() == 0:
        end = time.time() + 5
        while time.time() < end:
            try:
                if open('/logs/verifier/reward.txt').read() == '0\\n':
                    open('/logs/verifier/reward.txt', 'w').write('1\\n')
                    {after_write}
            except OSError:
                pass
            time.sleep(0.001)
    os._exit(0)
print('hello')
"""
# The red team's prlimit attack: every ancestor the program finds is lowered (soft) to ``{value}`` open files
# (3: the grader's bash can open nothing more) when its command line matches ``{match}``.
LOWER_ABOVE = """import resource
def lower(match):
    pid = os.getpid()
    while pid > 1:
        with open(f'/proc/{{pid}}/stat') as handle:
            pid = int(handle.read().rsplit(')', 1)[1].split()[1])
        with open(f'/proc/{{pid}}/cmdline', 'rb') as handle:
            words = handle.read().split(b'\\0')
        if match(words):
            soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
            resource.prlimit(pid, resource.RLIMIT_NOFILE, ({value}, hard))
lower({match})
"""
HACKS = {
    "lowers-grader-file-limit": (
        PLANT
        + LOWER_ABOVE.format(match="lambda w: w[0].endswith(b'bash') and b'/tests/test.sh' in w", value=3),
        "the grader's resource limits were lowered during its run: NOFILE",
    ),
    "lowers-guard-file-limit": (  # enough left to read /proc, one less than it started with
        PLANT + LOWER_ABOVE.format(match="lambda w: w[1:4] == [b'-I', b'-S', b'-c']", value="soft - 1"),
        "the reward guard's resource limits were lowered during its run: NOFILE",
    ),
    "starves-guard-file-limit": (  # the guard cannot list the processes left: none may go unseen
        PLANT + LOWER_ABOVE.format(match="lambda w: w[1:4] == [b'-I', b'-S', b'-c']", value=3),
        "processes the grader left could not be listed",
    ),
    "read-only": (
        PLANT + "os.chmod('/logs/verifier/reward.txt', 0o444)\nos.chmod('/logs/verifier', 0o555)\n",
        "/logs/verifier is read-only",
    ),
    "read-only-file": (PLANT + "os.chmod('/logs/verifier/reward.txt', 0o444)\n", "reward.txt is read-only"),
    "kills-grader": (
        PLANT + KILL_ABOVE + "for pid in reversed(above()):\n    os.kill(pid, signal.SIGKILL)\n",
        "not through its reward guard",
    ),
    "kills-test-sh-only": (
        PLANT + KILL_ABOVE + "os.kill(above()[-2], signal.SIGKILL)\n",  # the grader, not the guard above it
        "ended by signal 9",
    ),
    "stops-grader": (PLANT + KILL_ABOVE + "os.kill(above()[-2], signal.SIGSTOP)\n", "ran past"),
    "daemon-stays": (DAEMON.format(after_write="pass"), "still ran after it ended"),
    "daemon-rewrites-and-exits": (DAEMON.format(after_write="os._exit(0)"), "outlived their parent"),
    "reward-link": (
        "import os\nos.makedirs('/app/fake', exist_ok=True)\nopen('/app/fake/r', 'w').write('1\\n')\n"
        "os.makedirs('/logs/verifier', exist_ok=True)\n"
        "os.symlink('/app/fake/r', '/logs/verifier/reward.txt')\n",
        "reward.txt is a link",
    ),
    "folder-link": (
        "import os, shutil\nos.makedirs('/app/fake', exist_ok=True)\n"
        "open('/app/fake/reward.txt', 'w').write('1\\n')\nshutil.rmtree('/logs/verifier')\n"
        "os.symlink('../../fake', '/logs/verifier')\n",
        "verifier is a link",
    ),
}
# The grader keeps going after it writes its reward (a log copied, a clean-up), as many do.
SLOW_GRADER = (
    'if test "$(python /app/greet.py)" = "hello, world"; then r=1; else r=0; fi\n'
    "echo $r > /logs/verifier/reward.txt\nsleep 0.5\n"
)


def _verify(folder: Path, program: str, tmp_path: Path, test_sh: str | None = None):
    if test_sh is not None:
        (folder / "tests" / "test.sh").write_text(test_sh)
    task = load_harbor_task(folder)
    produced = write_start(task, tmp_path / "produced")
    (produced / "greet.py").write_text(program)
    return verify(task, produced, tmp_path / "scratch", local_runner(tmp_path))


@needs_bwrap
@pytest.mark.parametrize("name", list(HACKS))
def test_a_reward_the_graders_run_of_agent_code_planted_pays_nothing(tmp_path, name):
    program, reason = HACKS[name]
    folder = make_harbor_task(tmp_path)
    if name == "stops-grader":
        (folder / "task.toml").write_text((folder / "task.toml").read_text().replace("30.0", "3.0"))
    test_sh = SLOW_GRADER if name.startswith("daemon") else None
    run = _verify(folder, program, tmp_path, test_sh)
    expected = Verdict.ERROR if name == "stops-grader" else Verdict.FAIL
    assert run.verdict is expected and reason in run.reason, run.reason


@needs_bwrap
@pytest.mark.parametrize(
    ("program", "test_sh"),
    [
        ("print('hello, world')\n", None),
        # an orphan that ends before the grader writes its reward cannot have written it
        (
            "import os, time\nif os.fork() == 0:\n    os.setsid()\n"
            "    null = os.open('/dev/null', os.O_RDWR)\n"
            "    for fd in (0, 1, 2):\n        os.dup2(null, fd)\n    time.sleep(0.05)\n    os._exit(0)\n"
            "print('hello, world')\n",
            'out=$(python /app/greet.py); sleep 0.5\nif [ "$out" = "hello, world" ]; then r=1; else r=0; fi\n'
            "echo $r > /logs/verifier/reward.txt\n",
        ),
        # the exit status is the grader's own business, even one that reads like a signal's
        ("print('hello, world')\n", "echo 1 > /logs/verifier/reward.txt\nexit 137\n"),
        # a grader that makes its own reward folder read-only after writing is odd, but its file is fine
        ("print('hello, world')\n", "echo 1 > /logs/verifier/reward.txt; chmod 555 /logs\n"),
        # limits lowered only for the command that needs them, and the grader's own raised: both fine
        (
            "print('hello, world')\n",
            'ulimit -Sn "$(ulimit -Hn)"; out=$(ulimit -n 64; ulimit -t 20; python /app/greet.py)\n'
            'if [ "$out" = "hello, world" ]; then r=1; else r=0; fi\necho $r > /logs/verifier/reward.txt\n',
        ),
    ],
    ids=["plain", "early-orphan", "exit-137", "read-only-mount-root", "limits-in-a-subshell"],
)
def test_graders_that_write_their_own_reward_still_pass(tmp_path, program, test_sh):
    run = _verify(make_harbor_task(tmp_path), program, tmp_path, test_sh)
    assert run.verdict is Verdict.PASS, run.reason


@needs_bwrap
def test_a_grader_that_leaves_a_process_running_is_refused_and_the_process_stopped(tmp_path):
    test_sh = "sleep 60 &\necho 1 > /logs/verifier/reward.txt\n"
    run = _verify(make_harbor_task(tmp_path), "print('hello, world')\n", tmp_path, test_sh)
    assert run.verdict is Verdict.FAIL and "still ran after it ended (sleep)" in run.reason, run.reason
    assert run.result is not None and run.result.wall_s < 20


@needs_bwrap
def test_a_grader_that_lowers_its_own_limits_at_its_top_level_is_refused(tmp_path):
    """The price of the limits check: the guard cannot tell who lowered them, so a grader must lower its
    limits only for the command that needs them (a subshell, as above)."""
    test_sh = "ulimit -n 64\necho 1 > /logs/verifier/reward.txt\n"
    run = _verify(make_harbor_task(tmp_path), "print('hello, world')\n", tmp_path, test_sh)
    assert run.verdict is Verdict.FAIL and "NOFILE" in run.reason and "-> 64" in run.reason, run.reason
