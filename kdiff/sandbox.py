"""The judge's handle on a candidate's worker process.

The worker is a fresh interpreter (`python -m kdiff.worker`) in its own process group, talking
over two private pipes; its stdout and stderr go to a log file so that whatever the candidate
prints cannot corrupt the protocol. Every request has a deadline; a worker that misses it is
killed with its whole process group and restarted on the next request, replaying the
instances built so far.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kdiff import protocol


class CandidateFailure(Exception):
    """The candidate did something that is a verdict, not a kdiff bug."""

    signature = "candidate_error"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class CandidateRaised(CandidateFailure):
    signature = "raised"


class CandidateTimeout(CandidateFailure):
    signature = "hang"


class CandidateCrashed(CandidateFailure):
    signature = "crash"


class CandidateLoadError(CandidateFailure):
    signature = "does_not_import"


@dataclass
class SandboxLimits:
    call_timeout: float = 120.0  # one call of the model (the Triton interpreter is slow)
    start_timeout: float = 600.0  # import and build (a load_inline extension compiles here)
    memory_bytes: int | None = None  # address-space cap for CPU workers


@dataclass
class CandidateProcess:
    problem: Path
    candidate: Path
    device: str = "cpu"
    entry_points: tuple[str, ...] = ("ModelNew",)
    limits: SandboxLimits = field(default_factory=SandboxLimits)

    def __post_init__(self) -> None:
        self.problem, self.candidate = Path(self.problem).resolve(), Path(self.candidate).resolve()
        self._proc: subprocess.Popen[bytes] | None = None
        self._to_worker = self._from_worker = -1
        self._replay: list[dict[str, Any]] = []  # builds to redo after a restart
        self._log = tempfile.NamedTemporaryFile(prefix="kdiff-worker-", suffix=".log",
                                                delete=False)

    # -- lifecycle ------------------------------------------------------------------------
    def _spawn(self) -> None:
        judge_to_worker_r, judge_to_worker_w = os.pipe()
        worker_to_judge_r, worker_to_judge_w = os.pipe()
        env = dict(os.environ)
        if self.device == "cpu":
            env["TRITON_INTERPRET"] = "1"
            env["CUDA_VISIBLE_DEVICES"] = ""
        env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        limits = self.limits

        def preexec() -> None:
            if limits.memory_bytes:
                import resource
                resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))

        self._proc = subprocess.Popen(
            [sys.executable, "-m", "kdiff.worker", str(judge_to_worker_r), str(worker_to_judge_w)],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            pass_fds=(judge_to_worker_r, worker_to_judge_w), env=env,
            start_new_session=True, preexec_fn=preexec if limits.memory_bytes else None,
            cwd=str(self.candidate.parent))
        os.close(judge_to_worker_r)
        os.close(worker_to_judge_w)
        self._to_worker, self._from_worker = judge_to_worker_w, worker_to_judge_r
        init = {"cmd": "init", "problem": str(self.problem), "candidate": str(self.candidate),
                "device": self.device, "entry_points": list(self.entry_points)}
        reply = self._exchange(init, self.limits.start_timeout)
        if not reply["ok"]:
            self.close()
            raise CandidateLoadError(reply["error"])
        for build in self._replay:
            self._checked(self._exchange(build, self.limits.start_timeout))

    def close(self) -> None:
        if self._proc is None:
            return
        try:
            protocol.write_all(self._to_worker, protocol.encode({"cmd": "exit"}))
        except protocol.ChannelClosed:
            pass
        try:
            self._proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        self._kill()

    def _kill(self) -> None:
        if self._proc is None:
            return
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)  # the candidate's children too
        except (ProcessLookupError, PermissionError):
            pass
        self._proc.wait()
        for fd in (self._to_worker, self._from_worker):
            try:
                os.close(fd)
            except OSError:
                pass
        self._proc = None

    def __enter__(self) -> "CandidateProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        try:
            os.unlink(self._log.name)
        except OSError:
            pass

    # -- requests -------------------------------------------------------------------------
    def log_tail(self, n: int = 600) -> str:
        try:
            data = Path(self._log.name).read_bytes()
        except OSError:
            return ""
        return data[-n:].decode("utf-8", "replace").strip()

    def _exchange(self, msg: dict[str, Any], timeout: float) -> dict[str, Any]:
        try:
            protocol.write_all(self._to_worker, protocol.encode(msg))
            reply = protocol.read_message(self._from_worker, timeout, trusted=False)
        except protocol.ChannelTimeout:
            self._kill()
            raise CandidateTimeout(f"no answer to `{msg['cmd']}` within {timeout:.0f} s") from None
        except (protocol.ChannelClosed, EOFError) as exc:
            code = self._proc.poll() if self._proc else None
            if self._proc is not None and code is None:
                try:
                    code = self._proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
            self._kill()
            how = (f"killed by signal {signal.Signals(-code).name}" if code and code < 0
                   else f"exited with status {code}")
            tail = self.log_tail(300).replace("\n", " | ")
            raise CandidateCrashed(f"worker {how} during `{msg['cmd']}`"
                                   + (f"; last output: {tail}" if tail else "")) from exc
        except Exception as exc:  # an unreadable reply: a hostile worker
            self._kill()
            raise CandidateCrashed(f"unreadable reply to `{msg['cmd']}`: {exc}") from None
        if not isinstance(reply, dict) or "ok" not in reply:
            self._kill()
            raise CandidateCrashed(f"malformed reply to `{msg['cmd']}`")
        return reply

    @staticmethod
    def _checked(reply: dict[str, Any]) -> dict[str, Any]:
        if not reply["ok"]:
            raise CandidateRaised(reply["error"])
        return reply

    def request(self, cmd: str, timeout: float | None = None, **payload: Any) -> dict[str, Any]:
        if self._proc is None:
            self._spawn()
        msg = {"cmd": cmd, **payload}
        reply = self._checked(self._exchange(msg, timeout or self.limits.call_timeout))
        if cmd == "build":
            self._replay.append(msg)
        return reply
