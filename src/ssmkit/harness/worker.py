"""The judge's worker process: the only place candidate code runs.

Two halves of one protocol live here:
- ``serve()``: the worker's request loop (runs in the child, ``python -I``, as an unprivileged user when the judge
  is root). It loads the candidate (or the package's reference, for the baseline worker), maps shared input
  tensors, builds/calls the candidate on request and writes its outputs back (``ssmkit.harness.transport``).
- ``WorkerProcess``: the judge's handle on one worker: spawn (privilege drop, clean environment, resource limits,
  private pipes, stdout/stderr to a log file), ``request()`` with a timeout per call, kill.

Requests (JSON objects with an ``op``); each gets one reply ``{"ok": true, ...}`` or
``{"ok": false, "error": ..., "traceback": ...}``:
  hello  {device?}                        -> pid, uid, python, torch version, device_error: with ``device``, the
                                          worker adopts it and tries an allocation there before any candidate
                                          code loads (None: it works; else why not, e.g. no access to the GPU)
  load   {track, source: "candidate"|"reference", path}
  map    {tensors: {slot: descriptor}}    map judge-owned input slots (host shared memory)
  build  {config: {...}, weights: {param: slot}, dtype}   Granite: construct the layer, load weights
  prepare {...}                           set up the next call outside the timed region: copy its inputs to the
                                          device (and a cache, which the call may update in place)
  call                                    run the prepared call, synchronise, keep the outputs (the timed request)
  noop                                    synchronise and reply (the timing floor)
  fetch                                   copy the call's inputs back into their slots (so the judge sees any
                                          write into them), write the kept outputs to files; reply their
                                          descriptors, the peak CUDA memory (staged inputs included) and
                                          ``meta`` (Granite: ``cache_in_place`` after a call given a cache)
  exit
Granite ``prepare``: {hidden: slot, mask: slot|null, cache: null | {conv: slot, ssm: slot, seqlen_offset}}; the
cache is a private copy (not written back). Outputs: out, conv_state, ssm_state.
Mamba-3 ``prepare``: {args: [17 slots, in the order of the public entry]}. Outputs: its 16 results.
"""
from __future__ import annotations

import os
import pwd
import resource
import signal
import stat
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import torch

from ssmkit.harness.candidate import GRANITE_ATTRIBUTE, MAMBA3_ATTRIBUTE, load_module
from ssmkit.harness.transport import (
    CallTimeout,
    PeerGone,
    ProtocolError,
    SharedInputs,
    open_input,
    read_output,
    recv_message,
    send_message,
    write_output,
)

TRACKS = ("granite", "mamba3")
CANDIDATE_ENTRY = {"granite": GRANITE_ATTRIBUTE, "mamba3": MAMBA3_ATTRIBUTE}
GRANITE_OUTPUTS = ("out", "conv_state", "ssm_state")
MAMBA3_NUM_OUTPUTS = 16
_BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from ssmkit.harness.worker import main; main(sys.argv[2:])"
_TRACEBACK_CHARS = 4000


# ----------------------------------------------------------------------------------------------- worker side
class _CandidateError(Exception):
    """Candidate code failed or broke the contract; the message goes back to the judge."""


def _load_entry(track: str, source: str, path: str | None):
    """(callable under test, its module or None): the candidate file's entry point, or the package's reference."""
    if source == "reference":
        if track == "granite":
            from ssmkit.granite.reference import ReferenceMambaLayer

            return ReferenceMambaLayer, None
        from ssmkit.mamba3.reference import mamba3_siso_varlen_joint_states_full_vjp_reference

        return mamba3_siso_varlen_joint_states_full_vjp_reference, None
    module = load_module(path)
    entry = getattr(module, CANDIDATE_ENTRY[track], None)
    if not callable(entry):
        raise _CandidateError(f"candidate file defines no callable '{CANDIDATE_ENTRY[track]}'")
    return entry, module


def _granite_class(module, name: str):
    """``GraniteMambaConfig`` or ``MambaCache``: the candidate's own copy when it defines one (an exported file
    inlines them, and its layer checks ``isinstance`` against its own classes), else the package's."""
    own = getattr(module, name, None) if module is not None else None
    if isinstance(own, type):
        return own
    from ssmkit.granite.cache import MambaCache
    from ssmkit.granite.config import GraniteMambaConfig

    return {"GraniteMambaConfig": GraniteMambaConfig, "MambaCache": MambaCache}[name]


def _plain_tensor(value, what: str) -> torch.Tensor:
    if type(value) is not torch.Tensor:  # no subclasses: their data could be produced lazily, outside the timing
        raise _CandidateError(f"{what} is a {type(value).__name__}, expected a plain torch.Tensor")
    return value


class _Worker:
    """State of one worker: the entry point, mapped inputs, the built module, the prepared call and outputs."""

    def __init__(self, exchange: Path, outdir: Path):
        self.exchange, self.outdir = exchange, outdir
        self.track: str | None = None
        self.entry = None
        self.namespace = None
        self.module = None
        self.slots: dict[str, torch.Tensor] = {}
        self.prepared = None
        self.staged: list[tuple[str, torch.Tensor]] = []
        self.outputs: list[tuple[str, torch.Tensor]] = []
        self.meta: dict[str, bool] = {}
        self.device = torch.device("cpu")

    def handle(self, request: dict) -> dict:
        op = request.get("op")
        handler = getattr(self, f"op_{op}", None) if isinstance(op, str) else None
        if handler is None:
            raise ProtocolError(f"unknown op {op!r}")
        return handler(request) or {}

    def op_hello(self, request: dict) -> dict:
        device_error = None
        if "device" in request:
            try:  # e.g. this user cannot open the GPU device files
                self.device = torch.device(request["device"])
                torch.empty(1, device=self.device)
                self._synchronize()
            except Exception as err:  # noqa: BLE001 - reported to the judge, which refuses to run
                device_error = f"{type(err).__name__}: {err}"[:_TRACEBACK_CHARS]
        return {"pid": os.getpid(), "uid": os.getuid(), "python": sys.version.split()[0], "torch": torch.__version__,
                "device_error": device_error}

    def op_load(self, request: dict) -> None:
        track = request["track"]
        if track not in TRACKS:
            raise ProtocolError(f"unknown track {track!r}")
        self.track = track
        self.entry, self.namespace = _load_entry(track, request["source"], request.get("path"))

    def op_map(self, request: dict) -> None:
        for name, descriptor in request["tensors"].items():
            self.slots[name] = open_input(self.exchange, descriptor)

    def op_build(self, request: dict) -> None:
        dtype = getattr(torch, request["dtype"])
        config = _granite_class(self.namespace, "GraniteMambaConfig")(**{k: tuple(v) if isinstance(v, list) else v
                                       for k, v in request["config"].items()})
        layer = self.entry(config, layer_idx=0)
        if not isinstance(layer, torch.nn.Module):
            raise _CandidateError(f"CandidateBlock(config) returned a {type(layer).__name__}, expected an nn.Module")
        layer = layer.to(self.device, dtype)
        layer.load_state_dict({param: self.slots[slot] for param, slot in request["weights"].items()})
        self.module = layer.eval()

    def _stage(self, name: str) -> torch.Tensor:
        """A device copy of input slot ``name``, written back into the slot at fetch (so the judge sees writes)."""
        copy = self.slots[name].to(self.device, copy=True)
        self.staged.append((name, copy))
        return copy

    def op_prepare(self, request: dict) -> None:
        # free the previous call's tensors before allocating new ones
        self.outputs, self.prepared, self.staged, self.meta = [], None, [], {}
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        if self.track == "granite":
            cache = request.get("cache")
            if cache is not None:  # private copies: the layer updates its cache in place by contract
                cache = _granite_class(self.namespace, "MambaCache")(
                    conv_state=self.slots[cache["conv"]].to(self.device, copy=True),
                    ssm_state=self.slots[cache["ssm"]].to(self.device, copy=True), has_previous_state=True,
                    seqlen_offset=int(cache["seqlen_offset"]))
            mask = request.get("mask")
            self.prepared = (self._stage(request["hidden"]), cache, None if mask is None else self._stage(mask))
        else:
            self.prepared = [self._stage(name) for name in request["args"]]
        self._synchronize()

    def _synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def op_call(self, request: dict) -> None:
        if self.prepared is None:
            raise ProtocolError("call without prepare")
        prepared, self.prepared = self.prepared, None
        with torch.no_grad() if self.track == "granite" else torch.enable_grad():
            if self.track == "granite":
                hidden, cache, mask = prepared
                given = None if cache is None else (cache, cache.conv_state.data_ptr(), cache.ssm_state.data_ptr())
                result = self.module(hidden, cache=cache, attention_mask=mask)
                if not isinstance(result, tuple) or len(result) != 2:
                    raise _CandidateError(f"forward returned {type(result).__name__}, expected (output, cache)")
                out, new_cache = result
                if given is not None:  # the contract: a given cache is updated in place and returned
                    self.meta["cache_in_place"] = bool(
                        new_cache is given[0] and new_cache.conv_state.data_ptr() == given[1]
                        and new_cache.ssm_state.data_ptr() == given[2])
                tensors = [out, getattr(new_cache, "conv_state", None), getattr(new_cache, "ssm_state", None)]
                names = GRANITE_OUTPUTS
            else:
                result = self.entry(*prepared)
                if not isinstance(result, (tuple, list)) or len(result) != MAMBA3_NUM_OUTPUTS:
                    raise _CandidateError(f"solver returned {type(result).__name__} of length "
                                          f"{len(result) if isinstance(result, (tuple, list)) else '-'}, "
                                          f"expected {MAMBA3_NUM_OUTPUTS} tensors")
                tensors, names = list(result), [f"r{i}" for i in range(MAMBA3_NUM_OUTPUTS)]
        self.outputs = [(name, _plain_tensor(t, name)) for name, t in zip(names, tensors)]
        self._synchronize()

    def op_noop(self, request: dict) -> None:
        self._synchronize()

    def op_fetch(self, request: dict) -> dict:
        self._synchronize()
        for name, copy in self.staged:
            self.slots[name].copy_(copy)
        peak = torch.cuda.max_memory_allocated(self.device) if self.device.type == "cuda" else None
        return {"outputs": [write_output(self.outdir, name, t) for name, t in self.outputs], "peak_mem_bytes": peak,
                "meta": self.meta}


def serve(fd_in: int, fd_out: int, exchange: Path, outdir: Path) -> None:
    """Answer requests until ``exit`` or EOF. Candidate exceptions become error replies, never a dead loop."""
    worker = _Worker(exchange, outdir)
    while True:
        try:
            request = recv_message(fd_in, max_bytes=1 << 26)
        except PeerGone:
            return
        if request.get("op") == "exit":
            send_message(fd_out, {"ok": True})
            return
        try:
            reply = {"ok": True, **worker.handle(request)}
        except BaseException as err:  # noqa: BLE001 - candidate code may raise anything, SystemExit included
            try:
                text = f"{type(err).__name__}: {err}"
                tb = traceback.format_exc()[-_TRACEBACK_CHARS:]
            except BaseException:  # noqa: BLE001 - an exception whose str() raises
                text, tb = type(err).__name__, ""
            reply = {"ok": False, "error": text[:_TRACEBACK_CHARS], "traceback": tb}
        send_message(fd_out, reply)


def _apply_limits(memory_cap: int) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if memory_cap > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory_cap, memory_cap))


def main(argv: list[str]) -> None:
    """Worker entry: ``fd_in fd_out exchange_dir out_dir memory_cap_bytes`` (spawned by WorkerProcess).

    On the CPU (``TRITON_INTERPRET=1``) the package's fixes for the Triton interpreter's bf16 defects are applied
    before any candidate code loads, so an exported kernel candidate computes what it computes on a GPU.
    """
    fd_in, fd_out, exchange, outdir, memory_cap = argv
    _apply_limits(int(memory_cap))
    if os.environ.get("TRITON_INTERPRET") == "1":
        from ssmkit.kernels.interpreter import patch_triton_interpreter

        patch_triton_interpreter()
    serve(int(fd_in), int(fd_out), Path(exchange), Path(outdir))


# ------------------------------------------------------------------------------------------------ judge side
class WorkerFailure(RuntimeError):
    """A worker request failed; ``reason`` says how (candidate error, timeout, crash, protocol violation)."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(reason)
        self.reason, self.detail = reason, detail


class TransportError(WorkerFailure):
    """Shared inputs could not reach the worker: the judge's side of the exchange failed, not the candidate."""


@dataclass(frozen=True)
class WorkerUser:
    """Who a worker runs as: ``uid``/``gid`` to switch to, or None for the judge's own user."""

    uid: int | None
    gid: int | None
    name: str


UNPRIVILEGED_USER = "nobody"


class IsolationError(RuntimeError):
    """The worker cannot be run with the isolation the judge requires."""


def resolve_worker_user(allow_same_user: bool, probe_timeout: float = 120.0) -> tuple[WorkerUser, str]:
    """Who workers run as, and a sentence saying so for the report.

    Not root: the judge's own user (already unprivileged). Root: ``nobody`` (setuid/setgid and no supplementary
    groups in the child before exec), after a probe that ``nobody`` can start the interpreter and import ssmkit
    and torch. If that probe fails, IsolationError, unless ``allow_same_user`` (tests and development machines
    whose interpreter ``nobody`` cannot run), which keeps root and says so in a warning.
    """
    if os.geteuid() != 0:
        return WorkerUser(None, None, pwd.getpwuid(os.geteuid()).pw_name), "worker runs as the judge's own user"
    try:
        entry = pwd.getpwnam(UNPRIVILEGED_USER)
    except KeyError:
        problem = f"there is no user '{UNPRIVILEGED_USER}'"
    else:
        probe = "import sys; sys.path.insert(0, sys.argv[1]); import ssmkit, torch"
        try:
            done = subprocess.run([sys.executable, "-I", "-c", probe, str(package_root())], cwd="/",
                                  env={"PATH": "/usr/bin:/bin", "HOME": "/"}, capture_output=True,
                                  timeout=probe_timeout, user=entry.pw_uid, group=entry.pw_gid, extra_groups=[])
            problem = None if done.returncode == 0 else done.stderr.decode(errors="replace").strip()[-500:]
        except (OSError, subprocess.SubprocessError) as err:
            problem = f"{type(err).__name__}: {err}"
        if problem is None:
            return (WorkerUser(entry.pw_uid, entry.pw_gid, UNPRIVILEGED_USER),
                    f"worker runs as '{UNPRIVILEGED_USER}' (uid {entry.pw_uid})")
    message = f"cannot run the worker as '{UNPRIVILEGED_USER}': {problem}"
    if not allow_same_user:
        raise IsolationError(message + "; refusing to run candidate code as root")
    return WorkerUser(None, None, "root"), f"WARNING: {message}; worker runs as root (isolation reduced)"


def _worker_env(home: Path, triton_cache: Path, device: str) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "TRITON_CACHE_DIR": str(triton_cache),
        "TORCHINDUCTOR_CACHE_DIR": str(home / "inductor"),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    for key in ("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "CUDA_HOME", "TRITON_PTXAS_PATH", "TRITON_LIBCUDA_PATH"):
        if key in os.environ:
            env[key] = os.environ[key]
    if torch.device(device).type == "cpu":
        env["TRITON_INTERPRET"] = "1"  # no GPU: Triton kernels run in its interpreter
        # One thread per worker: idle OpenMP threads spinning after a call would steal the other worker's cores
        # and distort paired timings. (The CPU path exists to test the judge; real timings need a GPU.)
        env["OMP_NUM_THREADS"] = "1"
    return env


def package_root() -> Path:
    """The folder holding the installed ``ssmkit`` package (what the worker puts first on sys.path)."""
    import ssmkit

    return Path(ssmkit.__file__).resolve().parent.parent


class WorkerProcess:
    """One worker subprocess, with its own folder under ``run_dir`` (home, Triton cache, the candidate's copy).

    Its exchange and output folders are the judge's, beside that folder in ``run_dir`` (the worker could rename
    anything inside its own folder): the worker cannot plant links where the judge, maybe root, writes, reads or
    unlinks. Exchange (mode 711): files handed to the worker one by one. Output (mode 733): the worker adds files.

    ``memory_cap``: RLIMIT_AS in bytes (0: none). ``request(message, timeout)`` returns the reply or raises
    WorkerFailure; after a timeout, a crash or a protocol violation the worker is killed and stays dead.
    """

    def __init__(self, role: str, run_dir: Path, device: str, user: WorkerUser, memory_cap: int,
                 start_timeout: float):
        self.role, self.user = role, user
        self.folder = Path(run_dir) / role
        self.exchange, self.outdir = Path(run_dir) / f"{role}_exchange", Path(run_dir) / f"{role}_out"
        self.home, self.triton_cache = self.folder / "home", self.folder / "triton_cache"
        for path in (self.folder, self.home, self.triton_cache):
            path.mkdir(mode=0o700)
            self._give(path)
        for path, mode in ((self.exchange, 0o711), (self.outdir, 0o733)):
            path.mkdir()
            path.chmod(mode)  # not through mkdir: the umask would clear the write bits
        self.log_path = Path(run_dir) / f"{role}.log"
        to_worker_r, self._to_worker = os.pipe()
        self._from_worker, from_worker_w = os.pipe()
        argv = [sys.executable, "-I", "-c", _BOOT, str(package_root()), str(to_worker_r), str(from_worker_w),
                str(self.exchange), str(self.outdir), str(memory_cap)]
        try:
            with open(self.log_path, "wb") as log:
                self.proc = subprocess.Popen(
                    argv, pass_fds=(to_worker_r, from_worker_w), stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, cwd=self.folder,
                    env=_worker_env(self.home, self.triton_cache, device), start_new_session=True,
                    user=user.uid, group=user.gid, extra_groups=[] if user.uid is not None else None,
                )
        except OSError as err:
            for fd in (to_worker_r, self._to_worker, self._from_worker, from_worker_w):
                os.close(fd)
            raise WorkerFailure(f"cannot start the {role} worker as {user.name}: {err}") from None
        os.close(to_worker_r)
        os.close(from_worker_w)
        self.dead = False
        self.inputs = SharedInputs(self.exchange)
        self._unmapped: set[str] = set()
        self.last_fetch_devices: dict[str, str] = {}
        self.last_peak_mem: int | None = None
        self.last_meta: dict[str, bool] = {}
        try:
            self.hello = self.request({"op": "hello", "device": device}, start_timeout)
        except WorkerFailure:
            self.close()
            raise
        if self.hello.get("device_error") is not None:
            self.close()
            raise WorkerFailure(f"user {user.name} cannot use the device '{device}': {self.hello['device_error']} "
                                f"(a judge set-up problem: that user must be able to open the GPU device files, "
                                f"/dev/nvidia*)")

    def put(self, name: str, tensor: torch.Tensor) -> torch.Tensor:
        """Fill the shared input slot ``name`` (created on first use) and return it; ``map_inputs`` before use."""
        slot, new = self.inputs.put(name, tensor)
        if new:
            self._give(self.inputs.file_path(name))  # created with mode 600 in the judge's exchange folder
            self._unmapped.add(name)
        return slot

    def map_inputs(self, timeout: float) -> None:
        """Send the descriptors of slots the worker has not mapped yet."""
        if self._unmapped:
            names, self._unmapped = sorted(self._unmapped), set()
            try:
                self.request({"op": "map", "tensors": {n: self.inputs.descriptor(n) for n in names}}, timeout)
            except WorkerFailure as err:
                raise TransportError(err.reason, err.detail) from None

    def fetch(self, timeout: float, max_bytes: int) -> dict[str, torch.Tensor]:
        """The outputs of the last call, read into judge-owned host memory (then the worker's files are removed)."""
        reply = self.request({"op": "fetch"}, timeout)
        outputs = reply.get("outputs")
        if not isinstance(outputs, list):
            self.kill()
            raise WorkerFailure(f"{self.role} worker sent a malformed fetch reply")
        peak, meta = reply.get("peak_mem_bytes"), reply.get("meta")
        self.last_peak_mem = peak if isinstance(peak, int) and not isinstance(peak, bool) else None
        self.last_meta = {k: v for k, v in meta.items() if isinstance(v, bool)} if isinstance(meta, dict) else {}
        try:
            tensors = {d["file"][:-4]: read_output(self.outdir, d, max_bytes) for d in outputs}
            self.last_fetch_devices = {d["file"][:-4]: str(d.get("device")) for d in outputs}
        except (ProtocolError, KeyError, TypeError) as err:
            self.kill()
            raise WorkerFailure(f"{self.role} worker returned a malformed output: {err}") from None
        finally:
            for path in self.outdir.iterdir():
                try:
                    path.unlink()
                except OSError:
                    pass
        return tensors

    def _give(self, path: Path) -> None:
        """Hand ``path`` to the worker's user (a no-op when the worker runs as the judge's user)."""
        if self.user.uid is not None:
            os.chown(path, self.user.uid, self.user.gid)

    def add_file(self, name: str, data: bytes) -> Path:
        """Write a read-only file for the worker into its folder (e.g. the copy of the candidate)."""
        path = self.folder / name
        path.unlink(missing_ok=True)  # an earlier copy, or a link the worker planted (unlink does not follow it)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444)  # never through a link
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if self.user.uid is not None:
                os.fchown(fd, self.user.uid, self.user.gid)
        return path

    def freeze_triton_cache(self) -> None:
        """Make the Triton cache read-only after warm-up: compiling during timing then fails (effective only
        when the worker runs as another user; root ignores file modes)."""
        for path in sorted(self.triton_cache.rglob("*"), reverse=True) + [self.triton_cache]:
            try:  # by a descriptor opened without following links (the worker may plant them; the judge may be
                # root) and without blocking (a planted FIFO)
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                os.fchmod(fd, 0o555 if stat.S_ISDIR(os.fstat(fd).st_mode) else 0o444)
            finally:
                os.close(fd)

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return self.log_path.read_bytes()[-chars:].decode(errors="replace")
        except OSError:
            return ""

    def request(self, message: dict, timeout: float) -> dict:
        """Send one request and wait at most ``timeout`` seconds for its reply."""
        if self.dead:
            raise WorkerFailure(f"{self.role} worker is no longer running")
        what = message.get("op")
        try:
            send_message(self._to_worker, message)
            reply = recv_message(self._from_worker, timeout=timeout)
        except CallTimeout:
            self.kill()
            raise WorkerFailure(f"{self.role} worker timed out after {timeout:g} s in '{what}'", self.log_tail())
        except (PeerGone, BrokenPipeError):
            exit_text = self._exit_text()
            self.kill()
            raise WorkerFailure(f"{self.role} worker died during '{what}' ({exit_text})", self.log_tail())
        except ProtocolError as err:
            self.kill()
            raise WorkerFailure(f"{self.role} worker broke the protocol during '{what}': {err}", self.log_tail())
        if reply.get("ok") is True:
            return reply
        if reply.get("ok") is False and isinstance(reply.get("error"), str):
            raise WorkerFailure(f"{self.role} raised in '{what}': {reply['error']}", str(reply.get("traceback")))
        self.kill()
        raise WorkerFailure(f"{self.role} worker sent a malformed reply to '{what}'", self.log_tail())

    def _exit_text(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "still running"
        return f"killed by signal {-code}" if code < 0 else f"exit code {code}"

    def kill(self) -> None:
        """Kill the worker's whole process group (idempotent)."""
        self.dead = True
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()

    def close(self, timeout: float = 10.0) -> None:
        """Ask the worker to exit, kill it if it does not, and close the pipes."""
        if not self.dead:
            try:
                self.request({"op": "exit"}, timeout)
            except WorkerFailure:
                pass
        self.kill()
        for fd in (self._to_worker, self._from_worker):
            try:
                os.close(fd)
            except OSError:
                pass
