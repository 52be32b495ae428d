"""Open verdicts do not pass CI, and what the candidate's output or its worker's replies
break is the candidate's failure (`unusable_output`), not kdiff's error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from kdiff.commands.cli import exit_status, main
from kdiff.data.model import Case, GateResult, NativeVerdict, Status, Verdict
from kdiff.sandbox.replies import UnusableOutput, checked_reply

FIXTURES = Path(__file__).parent / "fixtures"
PROBLEM = FIXTURES / "core" / "scale_sum.py"


@pytest.mark.parametrize(
    "candidate, says",
    [
        ("quantized_output", "outputs[0] is a quantized tensor"),
        ("patched_worker", "the reply to `call` has no `seconds`"),
    ],
)
def test_an_unusable_output_rejects_the_candidate(candidate, says, tmp_path):
    out = tmp_path / "v.json"
    code = main(
        [
            "verify",
            "--problem",
            str(PROBLEM),
            "--candidate",
            str(FIXTURES / "cli" / f"{candidate}.py"),
            "--gates",
            "ORD-02",
            "--device",
            "cpu",
            "--json",
            str(out),
            "--call-timeout",
            "30",
        ]
    )
    kernel = json.loads(out.read_text())["kernels"][0]
    assert code == 1 and kernel["verifier_accept"] is False
    gate = kernel["gates"]["ORD-02"]
    assert (gate["status"], gate["signature"]) == ("fail", "unusable_output")
    assert says in gate["detail"]


@pytest.mark.parametrize(
    "reply, says",
    [
        ({"outputs": [torch.eye(3).to_sparse()]}, "outputs[0] is layout torch.sparse_coo"),
        ({"outputs": [torch.eye(3).to_sparse_csr()]}, "layout torch.sparse_csr"),
        ({"outputs": [torch.empty(3, device="meta")]}, "a tensor on device meta"),
        ({"outputs": [torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])]}, "nested"),
        ({"outputs": [[torch.ones(2)]]}, "unusable `outputs`"),
        ({"outputs": "no"}, "unusable `outputs` (str)"),
        ({"outputs": [], "seconds": float("nan")}, "unusable `seconds`"),
        ({"outputs": [], "seconds": "1"}, "unusable `seconds`"),
        ({"outputs": [], "reused": ["0"]}, "unusable `reused`"),
        ({"outputs": [], "written": -1}, "unusable `written`"),
        ({"bytes": 1.5}, "unusable `bytes`"),
        ({"extra": {"deep": [torch.eye(2).to_sparse()]}}, "extra.deep[0] is layout"),
    ],
)
def test_unusable_replies_are_refused(reply, says):
    with pytest.raises(UnusableOutput, match=None) as caught:
        checked_reply("call", reply)
    assert says in caught.value.detail and caught.value.signature == "unusable_output"


def test_usable_replies_pass_and_missing_fields_fail_when_read():
    reply = checked_reply(
        "call",
        {
            "outputs": [torch.ones(2), torch.ones(1)],
            "seconds": 0.5,
            "reused": [],
            "inputs_after": [torch.ones(1), None],
        },
    )
    assert reply["seconds"] == 0.5 and reply.get("bytes") is None
    with pytest.raises(UnusableOutput, match="has no `bytes`"):
        reply["bytes"]


def _verdict(accept: bool | None) -> Verdict:
    status = {True: Status.PASS, False: Status.FAIL, None: Status.ERROR}[accept]
    return Verdict(
        Case("k", Path("p.py"), Path("c.py")),
        NativeVerdict(True, "kernelbench"),
        {"EXC-01": GateResult("EXC-01", status)},
    )


def test_undecided_fails_violation_unless_opted_out():
    open_, ok = _verdict(None), _verdict(True)
    assert exit_status([ok, open_], "violation") == 1
    assert exit_status([ok, open_], "violation", undecided_ok=True) == 0
    assert exit_status([ok, _verdict(False)], "violation", undecided_ok=True) == 1
    assert exit_status([ok, open_], "never") == 0


def test_a_sparse_output_is_judged_not_left_open(tmp_path):
    """Its worker fails on the sparse tensor inside the gates (`raised`); the native check,
    which compares what comes back, refuses it as unusable instead of breaking the judge."""
    out = tmp_path / "v.json"
    code = main(
        [
            "verify",
            "--problem",
            str(PROBLEM),
            "--candidate",
            str(FIXTURES / "cli" / "sparse_output.py"),
            "--gates",
            "ORD-02",
            "--device",
            "cpu",
            "--json",
            str(out),
            "--call-timeout",
            "30",
        ]
    )
    kernel = json.loads(out.read_text())["kernels"][0]
    assert code == 1 and kernel["verifier_accept"] is False
    assert kernel["native_accept"] is False
    assert kernel["native"]["reason"].startswith("unusable_output: outputs[0] is layout")


def test_a_reply_nested_past_the_recursion_limit_is_unusable():
    import sys

    deep: list = []
    for _ in range(sys.getrecursionlimit() + 10):
        deep = [deep]
    with pytest.raises(UnusableOutput, match="nested too deeply"):
        checked_reply("call", {"extra": deep})


def test_a_candidate_doing_as_a_reference_without_tensors_does_is_not_rejected(tmp_path):
    """Every gate skips a problem whose reference returns no tensor; RES-02 had called the
    candidate alone and rejected it for the same TypeError."""
    out = tmp_path / "v.json"
    main(
        [
            "verify",
            "--problem",
            str(FIXTURES / "core" / "returns_a_handle.py"),
            "--candidate",
            str(FIXTURES / "core" / "returns_a_handle_too.py"),
            "--gates",
            "RES-02,ORD-02",
            "--device",
            "cpu",
            "--json",
            str(out),
            "--call-timeout",
            "30",
        ]
    )
    kernel = json.loads(out.read_text())["kernels"][0]
    gates = kernel["gates"]
    assert {g: r["status"] for g, r in gates.items()} == {"RES-02": "skip", "ORD-02": "skip"}
    assert "reference outside its contract" in gates["RES-02"]["detail"]
    # and with nothing judged, nothing is vouched for: undecided, not accepted
    assert kernel["verifier_accept"] is None


@pytest.mark.parametrize(
    "statuses, accept",
    [
        ((Status.SKIP, Status.UNDER_SPECIFIED), None),  # judged by nothing
        ((), None),  # no gate selected
        ((Status.SKIP, Status.PASS), True),
        ((Status.SKIP, Status.FAIL), False),
        ((Status.UNDER_SPECIFIED, Status.ERROR), None),
    ],
)
def test_a_kernel_no_gate_could_judge_is_undecided(statuses, accept):
    """And a pass of a gate that judges how the candidate runs, not what it returns, is not
    a judgement of its outputs (below)."""
    verdict = Verdict(
        Case("k", Path("p.py"), Path("c.py")),
        NativeVerdict(True, "kernelbench"),
        {f"G{i}": GateResult(f"G{i}", s, detail=f"reason {i}") for i, s in enumerate(statuses)},
    )
    assert verdict.verifier_accept is accept
    if accept is None and Status.ERROR not in statuses:
        from reports.rows import kernel_row

        assert kernel_row(verdict).message.startswith("no gate could judge it")
        assert exit_status([verdict], "violation") == 1


def test_a_pass_on_how_a_kernel_runs_alone_vouches_for_no_output():
    """TritonBench-T's `rand` and three dropout answers: every gate that reads the outputs
    under-specified (the reference is random), RES-02 passed: accepted, though no output was
    judged. Now undecided, saying so; RES-02's failure still rejects."""
    from reports.rows import kernel_row

    def verdict(res02: Status) -> Verdict:
        gates = {
            "ORD-02": GateResult("ORD-02", Status.UNDER_SPECIFIED, detail="random"),
            "RES-02": GateResult("RES-02", res02, detail="resources"),
        }
        return Verdict(
            Case("k", Path("p.py"), Path("c.py")), NativeVerdict(True, "kernelbench"), gates
        )

    assert verdict(Status.PASS).verifier_accept is None
    message = kernel_row(verdict(Status.PASS)).message
    assert "RES-02 passed, on how it runs alone" in message and "ORD-02: random" in message
    assert verdict(Status.FAIL).verifier_accept is False
    alone = Verdict(
        Case("k", Path("p.py"), Path("c.py")),
        NativeVerdict(True, "kernelbench"),
        {"RES-02": GateResult("RES-02", Status.PASS, detail="resources")},
    )
    assert alone.verifier_accept is True  # `--gates RES-02`: what was asked is what is judged


def test_a_trial_that_judged_no_element_vouches_for_nothing(tmp_path):
    """Where the oracle is NaN everywhere no element of a trial is judged by the bound
    (EXC-01 owns non-finite values): such a trial is under-specified, not within the bound,
    so a gate of such trials alone does not pass a candidate that answers 1."""
    from test_false_rejects import candidate_source, judge, problem_source  # beside this file

    nowhere_finite = problem_source("torch.log(-x.abs() - 1)", "torch.randn(16, 64)")  # NaN
    result = judge(tmp_path, nowhere_finite, candidate_source("x * 0 + 1"), ["CMP-01", "EXC-01"])
    assert result.gates["EXC-01"].status is Status.FAIL, result.gates["EXC-01"].detail
    cmp01 = result.gates["CMP-01"]
    assert cmp01.status is Status.UNDER_SPECIFIED, cmp01.detail
    assert "no element is judged" in cmp01.detail
