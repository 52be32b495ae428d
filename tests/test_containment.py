"""Containment that does not rest on namespaces or Landlock (the CUDA driver fails under
both): a worker of its own uid under a seccomp filter, in cgroups of its own; and nothing a
run starts outlives it, even a `kill -9` of the run."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import site
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch
from processes import alive, descendants, named  # beside this file
from test_hostile import DEVICE, MEMORY

from kdiff.data.cache import private_root
from kdiff.sandbox import confine
from kdiff.sandbox.process import (
    CandidateCrashed,
    CandidateLoadError,
    CandidateProcess,
    SandboxLimits,
    code_folders,
)

HOSTILE = Path(__file__).parent / "hostile"
CHECKOUT = Path(__file__).parent / "fixtures" / "kernelbench_checkout"
# As the hostile suite's limits, with namespaces and Landlock off: what is left is the uid,
# the seccomp filter, the cgroups and the limits, as on CUDA.
UID_ALONE = SandboxLimits(call_timeout=10.0 if DEVICE == "cpu" else 60.0, memory_bytes=MEMORY,
                          max_tasks=64, max_file_bytes=16 << 20, confine=False, own_uid=True)
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="a uid of its own is root's to give")


def _call(worker: CandidateProcess) -> dict:
    worker.request("build", key="c", role="candidate", seed=0, dtype="float32", init_inputs=[])
    return worker.request("call", key="c", inputs=[torch.randn(4, 8)])


@pytest.fixture
def open_folder():
    """A folder anyone may read, as a user's runs usually are (pytest's own are its owner's
    alone, where a worker keeps the judge's read capability)."""
    folder = Path(tempfile.mkdtemp(prefix="kdiff-open-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@root_only
@pytest.mark.parametrize("attack", ["write_files", "kill_judge", "network", "reads_judges_cache"])
def test_uid_and_seccomp_alone_contain_the_attack(attack, open_folder):
    """What the hostile suite checks with Landlock and namespaces, with neither."""
    private_code = confine.reads_need_capability(code_folders())
    if attack == "reads_judges_cache" and private_code:
        pytest.skip(f"{private_code[0]} is its owner's alone: the worker keeps the judge's reads")
    folder = open_folder / "kernels"
    shutil.copytree(HOSTILE, folder)
    honest = (folder / "honest.py").read_text()
    target = open_folder / "store.sqlite"
    target.write_bytes(b"results")
    listener = socket.create_server(("127.0.0.1", 0))
    (folder / "hostile.json").write_text(json.dumps(
        {"targets": [str(target)], "port": listener.getsockname()[1],
         "private": str(private_root())}))
    try:
        with CandidateProcess(folder / "problem.py", folder / f"{attack}.py", device=DEVICE,
                              limits=UID_ALONE) as worker:
            with pytest.raises(Exception) as refused:
                _call(worker)
            containment = worker.containment.split(",")
    finally:
        listener.close()
    assert type(refused.value).__name__ == "CandidateRaised"
    assert "PermissionError" in str(refused.value), refused.value
    assert {"uid", "seccomp"} <= set(containment), containment
    assert ("uid-reads" in containment) == (not private_code), containment
    assert not [m for m in containment if "landlock" in m or "namespace" in m], containment
    assert (folder / "honest.py").read_text() == honest and target.read_bytes() == b"results"


@root_only
def test_a_private_candidate_keeps_the_read_capability_and_the_judge_says_so(tmp_path, capsys):
    """A candidate only its owner may read (pytest's folders are) is read through the judge's
    capability: the worker's reads are then uncontained without Landlock, and the judge says
    which file made it so."""
    folder = tmp_path / "kernels"
    shutil.copytree(HOSTILE, folder)
    with CandidateProcess(folder / "problem.py", folder / "honest.py", device=DEVICE,
                          limits=UID_ALONE) as worker:
        _call(worker)
        containment = worker.containment.split(",")
    assert "uid" in containment and "uid-reads" not in containment, containment
    assert "readable by its owner alone" in capsys.readouterr().err


@root_only
def test_a_daemon_dies_with_its_worker_without_a_pid_namespace():
    """A grandchild that left the worker's session is still in the worker's cgroup: the
    judge kills the cgroup, not only the process group."""
    with CandidateProcess(HOSTILE / "problem.py", HOSTILE / "daemon.py", device=DEVICE,
                          limits=UID_ALONE) as worker:
        _call(worker)
        assert named("kdiff-daemon"), "the daemon never started"
        assert "tasks-cgroup" in worker.containment
    deadline = time.monotonic() + 5
    while named("kdiff-daemon") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert named("kdiff-daemon") == []


def test_the_seccomp_program_jumps_land_on_instructions():
    """Every jump of the filter ends inside it, and it ends in a return."""
    for machine in confine._SECCOMP_ARCH:
        prog = confine.seccomp_program(machine)
        assert prog[-1][0] == confine._RET
        for i, (code, jt, jf, _) in enumerate(prog):
            if code in (confine._JEQ, confine._JGE, confine._JSET):
                assert i + 1 + max(jt, jf) < len(prog)


SLEEPER_NAME = "kdiff-asleep"
SLEEPER = (f"import ctypes, time; ctypes.CDLL(None).prctl(15, b'{SLEEPER_NAME}', 0, 0, 0); "
           "time.sleep(300); return x * 2.0")


def test_kill_9_of_a_run_leaves_no_process_and_no_folder(tmp_path):
    """`kill -9` of `kdiff run --jobs 2` while both judges' workers are in a call: within
    seconds no process it started is alive (judges die with the driver, zygotes with their
    judges, workers with their zygotes) and nothing of it is left in its temporary folder
    or the cgroup hierarchies (each zygote removes its judge's leftovers as it dies)."""
    root = tmp_path / "checkout"
    shutil.copytree(CHECKOUT / "KernelBench", root / "KernelBench")
    runs = root / "runs"
    runs.mkdir()
    honest = CHECKOUT / "runs" / "run_a" / "level_1_problem_1_sample_0_kernel.py"
    for sample in (0, 1, 2):
        (runs / f"level_1_problem_1_sample_{sample}_kernel.py").write_text(
            honest.read_text().replace("return x * 2.0", SLEEPER))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kdiff.commands.cli", "run", "--bench", "kernelbench", "--root", str(root),
         "--runs", str(runs), "--gates", "ORD-02", "--device", "cpu", "--jobs", "2",
         "--call-timeout", "600", "--store", str(tmp_path / "s.sqlite")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        env={**os.environ, "TMPDIR": str(tmp)})
    deadline = time.monotonic() + 240
    while len(named(SLEEPER_NAME)) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    started = descendants(proc.pid)
    judges = [pid for pid in started if descendants(pid)]  # the driver's forked judges
    asleep = len(named(SLEEPER_NAME))
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert asleep >= 2, "the workers never reached their call"
    deadline = time.monotonic() + 10
    while (alive(started) or list(tmp.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert alive(started) == [], {p: Path(f"/proc/{p}/cmdline").read_bytes()[:80]
                                  for p in alive(started)}
    assert sorted(p.name for p in tmp.iterdir()) == [], (proc.pid, judges)
    left = [name for parent in confine._worker_cgroup_parents() for name in os.listdir(parent)
            if any(name.startswith(f"{confine.JUDGE_PREFIX}{pid}-") for pid in judges)]
    assert left == []


@root_only
def test_what_a_worker_leaves_in_shared_folders_goes_with_it():
    """Under its own uid a worker may write where anyone may (/tmp, /dev/shm) and make System
    V shared memory: the judge removes what that uid left once the worker is gone."""
    from glob import glob

    def left() -> list[str]:
        with open("/proc/sysvipc/shm") as f:
            segments = [row.split()[0] for row in list(f)[1:]]
        return (glob("/tmp/kdiff-hostile-left-*") + glob("/dev/shm/kdiff-hostile-left-*")
                + [key for key in segments if int(key) == 0x6B646966])

    assert left() == []
    with CandidateProcess(HOSTILE / "problem.py", HOSTILE / "leaves_files.py", device=DEVICE,
                          limits=UID_ALONE) as worker:
        _call(worker)
        assert len(left()) == 4, left()
    assert left() == []


@root_only
def test_a_worker_of_its_own_uid_still_has_a_user_name(tmp_path):
    """Its uid has no passwd entry; getpass.getuser() (torch.compile's inductor asks it) must
    answer all the same."""
    candidate = tmp_path / "asks_its_name.py"
    candidate.write_text("import getpass\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
                         "    def forward(self, x):\n        assert getpass.getuser()\n"
                         "        return x * 2\n")
    with CandidateProcess(HOSTILE / "problem.py", candidate, device=DEVICE,
                          limits=UID_ALONE) as worker:
        assert _call(worker)["ok"]
        assert "uid" in worker.containment.split(",")


@pytest.mark.skipif(confine.landlock_abi() < 1, reason="no Landlock on this kernel")
def test_landlock_keeps_a_process_of_the_same_uid_out_of_the_unreadable_folder(tmp_path):
    """Without a uid of its own (a judge that is not root), Landlock's read rules alone: the
    folder is unreadable, its siblings and everything above stay readable."""
    hidden, beside = tmp_path / "cache" / "private", tmp_path / "cache" / "open"
    for folder in (hidden, beside):
        folder.mkdir(parents=True)
        (folder / "f").write_text("x")
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            confine.apply(confine.Confinement(unreadable=[str(hidden)], namespaces=False))
            (beside / "f").read_text()
            os.listdir(tmp_path / "cache")
            try:
                (hidden / "f").read_text()
            except PermissionError:
                status = 0
        finally:
            os._exit(status)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def test_no_process_of_a_candidates_reads_a_user_site_from_its_home(tmp_path):
    """Every process that runs candidate code has a home of its own, which it writes: Python
    would run the `.pth` files of that home's user site-packages at its start."""
    from kdiff.sandbox.workerenv import confined_environment

    assert confined_environment(os.environ, DEVICE, tmp_path)["PYTHONNOUSERSITE"] == "1"


@pytest.mark.slow
@pytest.mark.skipif(not site.ENABLE_USER_SITE, reason="this interpreter reads no user site "
                    "(a virtual environment without the system's packages)")
def test_a_planted_user_site_is_not_run_when_the_worker_starts_again_cold():
    """plants_a_user_site writes a `.pth` into its homes and ends its worker; the worker
    started again cold (its folder kept) ran the line, first as the launcher's root, before
    any confinement. 5 s: two cold starts."""
    limits = SandboxLimits(call_timeout=30.0, warm_start=False)
    with CandidateProcess(HOSTILE / "problem.py", HOSTILE / "plants_a_user_site.py",
                          device=DEVICE, limits=limits) as worker:
        worker.request("forget")
        time.sleep(1.0)  # its worker ended meanwhile
        with pytest.raises(CandidateCrashed):
            worker.request("forget")
        worker.request("forget")  # a cold start in the same folder
        ran = worker.workdir / "site-ran"
        assert not ran.exists(), ran.read_text()


def test_the_launcher_enters_the_programs_folder_once_confined(tmp_path):
    """The launcher starts in a folder no candidate writes and enters `cwd` once confined:
    `python -m kdiff.sandbox.confine`, started in a worker's folder, imported the `kdiff`
    package a candidate wrote there (plants_a_kdiff_package)."""
    folder = tmp_path / "worker"
    (folder / "kdiff").mkdir(parents=True)
    (folder / "kdiff" / "__init__.py").write_text("raise SystemExit('planted')\n")
    spec = confine.Confinement(cwd=str(folder), landlock=False, namespaces=False)
    ran = subprocess.run(spec.command([sys.executable, "-c", "import os; print(os.getcwd())"]),
                         cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0 and ran.stdout.strip() == str(folder), ran.stderr


@pytest.mark.slow
def test_a_planted_kdiff_package_is_not_run_unconfined_when_the_worker_starts_again():
    """plants_a_kdiff_package writes a `kdiff` package into its folder and ends its worker;
    the worker started again cold ran it in the launcher, before any confinement. 6 s: three
    cold starts."""
    limits = SandboxLimits(call_timeout=30.0, warm_start=False)
    with CandidateProcess(HOSTILE / "problem.py", HOSTILE / "plants_a_kdiff_package.py",
                          device=DEVICE, limits=limits) as worker:
        worker.request("forget")
        time.sleep(1.0)  # its worker ended meanwhile
        for _ in range(2):  # a cold start in the same folder (which the package may break)
            with contextlib.suppress(CandidateCrashed, CandidateLoadError):
                worker.request("forget")
        ran = worker.workdir / "kdiff-ran"
        lines = ran.read_text().split() if ran.exists() else []
        assert "unconfined" not in lines, lines


def _cpu_controller_of(pid: int | str) -> str:
    """The cpu cgroup process `pid` is in (v1's cpu hierarchy, else v2's)."""
    lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    named_cpu = [line for line in lines if "cpu" in line.split(":")[1].split(",")]
    return (named_cpu or [line for line in lines if line.startswith("0::")])[0].split(":", 2)[2]


def _cpu_controller_to_be_had() -> bool:
    v2 = Path("/sys/fs/cgroup/cgroup.controllers")
    if v2.exists():
        return "cpu" in v2.read_text().split()
    return os.access(f"/sys/fs/cgroup/cpu{_cpu_controller_of('self')}", os.W_OK)


# A candidate whose children leave its session (the fixture's spinners do, and spin).
LEAVES_ITS_SESSION = """import os
import time

import torch.nn as nn

for _ in range(2):
    if os.fork() == 0:
        os.setsid()
        time.sleep(600)


class ModelNew(nn.Module):
    def forward(self, x):
        return x * 2
"""


@root_only
@pytest.mark.skipif(not _cpu_controller_to_be_had(), reason="no cpu controller to be had here")
def test_a_workers_children_in_sessions_of_their_own_share_its_one_cpu_share(open_folder):
    """The sibling of tests/fixtures/cross_candidate/runs/beside_a_spinner starts processes
    that spin in sessions of their own as it is imported: the scheduler's autogroups gave
    each session a share of the cores, and an honest kernel judged beside it (`kdiff run
    --jobs 2`) failed `hang`. A worker's processes, in whatever session, stay in its cpu
    cgroup: one share for all of them."""
    candidate = open_folder / "leaves_its_session.py"
    candidate.write_text(LEAVES_ITS_SESSION)
    with CandidateProcess(HOSTILE / "problem.py", candidate, device=DEVICE,
                          limits=SandboxLimits(call_timeout=30.0)) as worker:
        worker.request("forget")  # started: its children sleep in sessions of their own
        pids = worker._cgroup.procs()
        groups = {_cpu_controller_of(pid) for pid in pids}
    assert len(pids) > 2 and len(groups) == 1, groups  # the worker and its two children
    assert groups != {_cpu_controller_of("self")}, groups  # a share of its own, not the judge's
