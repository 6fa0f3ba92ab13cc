"""The judge's worker process and transport: privilege drop, limits, protocol robustness, output validation."""
import os
import pwd
import tempfile
from pathlib import Path

import pytest
import torch

from ssmkit.harness.transport import ProtocolError, SharedInputs, open_input, read_output, write_output
from ssmkit.harness.worker import (
    IsolationError,
    TransportError,
    WorkerFailure,
    WorkerProcess,
    WorkerUser,
    resolve_worker_user,
)

SAME_USER = WorkerUser(None, None, "test")


@pytest.fixture
def run_dir():
    with tempfile.TemporaryDirectory(prefix="ssmkit-worker-test-") as folder:
        os.chmod(folder, 0o711)
        yield Path(folder)


def start(run_dir, memory_cap=0, role="candidate"):
    return WorkerProcess(role, run_dir, "cpu", SAME_USER, memory_cap, start_timeout=300)


def load(worker, source_text, timeout=120):
    path = worker.add_file("candidate.py", source_text.encode())
    return worker.request({"op": "load", "track": "mamba3", "source": "candidate", "path": str(path)}, timeout)


def test_root_judge_never_runs_workers_as_root_unless_allowed():
    if os.geteuid() != 0:
        user, note = resolve_worker_user(allow_same_user=False)
        assert user.uid is None and "own user" in note
        return
    try:
        user, note = resolve_worker_user(allow_same_user=False)
    except IsolationError as err:  # this machine's interpreter is unreachable for 'nobody': refuse, never root
        assert "refusing to run candidate code as root" in str(err)
        user, note = resolve_worker_user(allow_same_user=True)
        assert user.uid is None and note.startswith("WARNING")
        return
    assert user.uid == pwd.getpwnam("nobody").pw_uid
    with tempfile.TemporaryDirectory() as folder:
        os.chmod(folder, 0o711)
        worker = WorkerProcess("candidate", Path(folder), "cpu", user, 0, start_timeout=300)
        try:
            assert worker.hello["uid"] == user.uid
        finally:
            worker.close()


def test_garbage_on_the_protocol_pipe_is_a_clean_failure(run_dir):
    worker = start(run_dir)
    evil = "import os, sys\nos.write(int(sys.argv[3]), b'not a frame, just garbage bytes')\n"
    with pytest.raises(WorkerFailure, match="broke the protocol during 'load'"):
        load(worker, evil)
    assert worker.dead and worker.proc.poll() is not None
    worker.close()


def test_candidate_exceptions_and_exit_become_error_replies(run_dir):
    worker = start(run_dir)
    try:
        with pytest.raises(WorkerFailure, match="raised in 'load': SystemExit: 3"):
            load(worker, "import sys\nsys.exit(3)\n")
        assert worker.request({"op": "hello"}, 60)["ok"]  # the worker survives
        with pytest.raises(WorkerFailure, match="defines no callable 'mamba3_siso_varlen_joint_states_full_vjp'"):
            load(worker, "x = 1\n")
    finally:
        worker.close()


def test_memory_cap_turns_a_huge_allocation_into_an_error(run_dir):
    worker = start(run_dir, memory_cap=6 << 30)
    try:
        with pytest.raises(WorkerFailure, match="raised in 'load': .*can't allocate memory"):
            load(worker, "import torch\nx = torch.ones(8 << 30, dtype=torch.uint8)\n")
        assert worker.request({"op": "hello"}, 60)["ok"]
    finally:
        worker.close()


def test_shared_input_writes_are_visible_to_the_judge(tmp_path):
    shared = SharedInputs(tmp_path)
    source = torch.randn(4, 5).to(torch.bfloat16)
    slot, new = shared.put("x", source)
    assert new and torch.equal(slot, source)
    view = open_input(tmp_path, shared.descriptor("x"))  # what a worker maps
    assert torch.equal(view, source)
    view[1, 2] = 7.0
    assert slot[1, 2].item() == 7.0
    refill = torch.randn(4, 5).to(torch.bfloat16)
    slot2, new2 = shared.put("x", refill)  # same shape: the same buffer is refilled in place
    assert not new2 and slot2 is slot and torch.equal(view, refill)


def test_outputs_round_trip_exactly(tmp_path):
    for t in (torch.randn(3, 4).to(torch.bfloat16), torch.randn(2, 2, 2), torch.arange(5, dtype=torch.int32)):
        back = read_output(tmp_path, write_output(tmp_path, "r", t), max_bytes=1 << 20)
        assert back.dtype == t.dtype and torch.equal(back, t)


@pytest.mark.parametrize("change, message", [
    ({"file": "../r.out"}, "bad output file name"),
    ({"file": "r.bin"}, "bad output file name"),
    ({"dtype": "complex64"}, "bad output dtype"),
    ({"shape": [3, -1]}, "bad output shape"),
    ({"shape": [3, 5]}, "has 24 bytes, expected 60"),
    ({"shape": [1 << 20, 1 << 20]}, "exceeds"),
])
def test_malformed_output_descriptors_are_rejected(tmp_path, change, message):
    descriptor = write_output(tmp_path, "r", torch.randn(3, 2))
    with pytest.raises(ProtocolError, match=message):
        read_output(tmp_path, {**descriptor, **change}, max_bytes=1 << 30)


def test_output_links_are_not_followed(tmp_path):
    secret = tmp_path / "secret"
    secret.write_bytes(b"\0" * 24)
    (tmp_path / "r.out").symlink_to(secret)
    with pytest.raises(ProtocolError, match="cannot open output"):
        read_output(tmp_path, {"file": "r.out", "dtype": "float32", "shape": [6]}, max_bytes=1 << 20)


def test_a_worker_that_cannot_start_is_a_clean_failure(run_dir):
    if os.geteuid() != 0:
        pytest.skip("switching users needs root")
    unreachable = WorkerUser(pwd.getpwnam("nobody").pw_uid, pwd.getpwnam("nobody").pw_gid, "nobody")
    try:
        worker = WorkerProcess("candidate", run_dir, "cpu", unreachable, 0, start_timeout=300)
    except WorkerFailure as err:  # e.g. this machine's interpreter is unreachable for 'nobody'
        assert "candidate worker" in err.reason
        return
    try:  # the interpreter is reachable: then the worker really runs as 'nobody'
        assert worker.hello["uid"] == unreachable.uid
    finally:
        worker.close()


def test_inputs_that_cannot_be_mapped_are_a_transport_error(run_dir):
    worker = start(run_dir)
    try:
        worker.put("x", torch.randn(3))
        path = worker.inputs.file_path("x")
        path.unlink()
        path.mkdir()  # the judge's side of the exchange breaks: the slot is no longer a file
        with pytest.raises(TransportError, match="raised in 'map'"):
            worker.map_inputs(60)
    finally:
        worker.close()


def test_a_call_that_writes_into_its_input_is_seen_by_the_judge(run_dir):
    worker = start(run_dir)
    try:
        load(worker, "def mamba3_siso_varlen_joint_states_full_vjp(x):\n    x.add_(1)\n    return (x,) * 16\n")
        slot = worker.put("x", torch.zeros(4))
        worker.map_inputs(60)
        worker.request({"op": "prepare", "args": ["x"]}, 60)
        worker.request({"op": "call"}, 60)
        assert torch.equal(slot, torch.zeros(4))  # the call ran on the worker's own copy...
        outputs = worker.fetch(60, 1 << 20)
        assert torch.equal(slot, torch.ones(4))  # ...which is written back at fetch, so the judge sees the write
        assert torch.equal(outputs["r0"], torch.ones(4))
    finally:
        worker.close()


def test_rewritten_inputs_are_staged_afresh_before_every_call(run_dir):
    # Rotation: the judge refills the same slot (no new mapping); the next call must see the new values.
    worker = start(run_dir)
    try:
        load(worker, "def mamba3_siso_varlen_joint_states_full_vjp(x):\n    return (x * 2,) * 16\n")
        for rotation in range(3):
            values = torch.randn(5, 3)
            slot = worker.put("x", values)
            if rotation == 0:
                worker.map_inputs(60)
            assert not worker._unmapped  # a refill: the worker keeps its mapping of the same file
            worker.request({"op": "prepare", "args": ["x"]}, 60)
            worker.request({"op": "call"}, 60)
            outputs = worker.fetch(60, 1 << 20)
            assert torch.equal(outputs["r0"], values * 2) and torch.equal(slot, values)
    finally:
        worker.close()


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine where the worker cannot use CUDA")
def test_a_worker_that_cannot_use_its_device_fails_at_start_with_the_reason(run_dir):
    with pytest.raises(WorkerFailure, match="user test cannot use the device 'cuda'"):
        WorkerProcess("candidate", run_dir, "cuda", SAME_USER, 0, start_timeout=300)


def test_the_judge_never_writes_through_links_planted_by_the_worker(run_dir, tmp_path):
    # The judge may be root: where the worker can create entries, the judge must not follow them.
    worker = start(run_dir)
    target = tmp_path / "victim"
    target.write_bytes(b"keep")
    target.chmod(0o600)
    try:
        (worker.triton_cache / "planted").symlink_to(target)
        os.mkfifo(worker.triton_cache / "fifo")  # opening it for reading must not block the judge
        worker.freeze_triton_cache()
        assert (target.stat().st_mode & 0o777) == 0o600
        (worker.folder / "candidate.py").symlink_to(target)
        path = worker.add_file("candidate.py", b"x = 1\n")
        assert not path.is_symlink() and path.read_bytes() == b"x = 1\n" and target.read_bytes() == b"keep"
        assert worker.exchange.parent == worker.outdir.parent == run_dir  # not inside the worker's own folder
    finally:
        worker.close()
