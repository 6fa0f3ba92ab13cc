"""Judge <-> worker transport: framed JSON messages on private pipes, tensors through shared memory.

Messages. Every message is one JSON object, framed as an 8-byte big-endian length followed by UTF-8 JSON, sent on
a pipe whose file descriptors only the judge and its worker hold (never the worker's stdout, so prints by candidate
code cannot corrupt the protocol). The judge never unpickles anything the worker sends: worker -> judge messages
are JSON, checked field by field, with a size cap.

Tensors, judge -> worker (inputs and weights): the judge writes each tensor (from any device) into a file of the
exchange folder (``/dev/shm`` when present) and keeps a ``MAP_SHARED`` mapping of it; the worker maps the same
file. The judge hashes these host buffers before and after every call. The worker stages them (the same code on
the CPU and on CUDA, so CPU tests exercise the GPU path): its ``prepare`` request copies the call's inputs to its
device, its ``fetch`` request copies them back into the host buffers, both outside the timed region, so in-place
writes still reach the judge's hashes (``ssmkit.harness.worker``). Why not CUDA IPC: a worker of another user
cannot open the handles ("mapping of buffer object failed" on the H200), and a handle maps the judge's whole
allocator segment, other judge tensors (reference results) included, into the worker.
Tensors, worker -> judge (outputs): the worker copies each output to the host and writes its raw bytes into a file
of its own output folder, outside any timed region; the judge reads the file by a name it checks (no path
separators, no links, exact byte size), so it never maps memory the worker could change later.
"""
from __future__ import annotations

import json
import os
import select
import struct
import time
from pathlib import Path

import numpy as np
import torch

MAX_MESSAGE_BYTES = 1 << 20
_HEADER = struct.Struct(">Q")

DTYPES = {
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float32": torch.float32,
    "float64": torch.float64,
    "int32": torch.int32,
    "int64": torch.int64,
    "uint8": torch.uint8,
    "bool": torch.bool,
}


class ProtocolError(RuntimeError):
    """The other side sent something that is not a well-formed protocol message."""


class PeerGone(RuntimeError):
    """The other side closed its pipe (it exited or crashed)."""


class CallTimeout(RuntimeError):
    """No reply arrived within the time limit."""


def dtype_name(dtype: torch.dtype) -> str:
    """The protocol name of ``dtype`` (a key of DTYPES); ValueError for dtypes the protocol does not carry."""
    for name, value in DTYPES.items():
        if value == dtype:
            return name
    raise ValueError(f"dtype {dtype} cannot cross the judge/worker boundary; expected one of {sorted(DTYPES)}")


def send_message(fd: int, message: dict) -> None:
    """Write one framed JSON message to ``fd`` (blocking)."""
    body = json.dumps(message).encode()
    data = _HEADER.pack(len(body)) + body
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _read_exact(fd: int, count: int, deadline: float | None) -> bytes:
    chunks = []
    while count:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise CallTimeout("no reply within the time limit")
        chunk = os.read(fd, min(count, 1 << 16))
        if not chunk:
            raise PeerGone("pipe closed")
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


def recv_message(fd: int, timeout: float | None = None, max_bytes: int = MAX_MESSAGE_BYTES) -> dict:
    """Read one framed JSON object from ``fd``; ``timeout`` seconds in all (None: wait forever).

    Raises CallTimeout, PeerGone (EOF), or ProtocolError (oversized, not UTF-8 JSON, or not an object).
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    (length,) = _HEADER.unpack(_read_exact(fd, _HEADER.size, deadline))
    if length > max_bytes:
        raise ProtocolError(f"message of {length} bytes exceeds the {max_bytes}-byte limit")
    body = _read_exact(fd, length, deadline)
    try:
        message = json.loads(body.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ProtocolError(f"message is not JSON: {err}") from None
    if not isinstance(message, dict):
        raise ProtocolError(f"message is a {type(message).__name__}, expected a JSON object")
    return message


EXCHANGE_MIN_FREE_BYTES = 4 << 30


def exchange_root() -> Path:
    """Where exchange folders live: /dev/shm (RAM-backed) when it exists, is writable and has at least
    EXCHANGE_MIN_FREE_BYTES free (a container's default /dev/shm is 64 MiB), else the temp folder."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        fs = os.statvfs(shm)
        if fs.f_bavail * fs.f_frsize >= EXCHANGE_MIN_FREE_BYTES:
            return shm
    return Path(os.environ.get("TMPDIR", "/tmp"))


class SharedInputs:
    """Judge side: named input slots shared with one worker, as host shared-memory files.

    ``put(name, tensor)`` creates the slot (shape and dtype fixed from then on) or refills it in place, and returns
    the slot's host tensor (the judge hashes it before and after calls); ``tensor`` may live on any device.
    ``descriptor(name)`` is what the worker needs to map it.
    """

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.slots: dict[str, torch.Tensor] = {}
        self._files: dict[str, str] = {}
        self._allocations = 0

    def put(self, name: str, tensor: torch.Tensor) -> tuple[torch.Tensor, bool]:
        """Fill slot ``name`` with ``tensor``; returns (slot, whether the slot is new and must be (re)mapped)."""
        if not name.isidentifier():
            raise ValueError(f"slot name must be an identifier, got {name!r}")
        slot, new = self.slots.get(name), False
        if slot is None or slot.shape != tensor.shape or slot.dtype != tensor.dtype:
            slot, new = self._allocate(name, tensor), True
            self.slots[name] = slot
        slot.copy_(tensor)  # into pageable host memory: synchronous, also from a device
        return slot, new

    def file_path(self, name: str) -> Path:
        """The file behind a slot."""
        return self.folder / self._files[name]

    def _allocate(self, name: str, tensor: torch.Tensor) -> torch.Tensor:
        dtype_name(tensor.dtype)
        # A new file per allocation: a worker may still map the previous one, which must not shrink under it. The
        # previous file is unlinked (an existing mapping stays valid), so the exchange folder does not grow.
        if name in self._files:
            self.file_path(name).unlink(missing_ok=True)
        self._allocations += 1
        path = self.folder / f"{name}_{self._allocations}.bin"
        self._files[name] = path.name
        nbytes = tensor.numel() * tensor.element_size()
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:  # reserve the pages now: a full tmpfs fails here (OSError), not with SIGBUS at a later write
            os.posix_fallocate(fd, 0, max(nbytes, 1))
        finally:
            os.close(fd)
        flat = torch.from_file(str(path), shared=True, size=max(tensor.numel(), 1), dtype=tensor.dtype)
        return flat[: tensor.numel()].view(tensor.shape)

    def descriptor(self, name: str) -> dict:
        slot = self.slots[name]
        return {"file": self._files[name], "dtype": dtype_name(slot.dtype), "shape": list(slot.shape)}


def open_input(folder: Path, descriptor: dict) -> torch.Tensor:
    """Worker side: map the judge's host slot described by ``descriptor`` (writes are visible to the judge)."""
    shape = [int(s) for s in descriptor["shape"]]
    numel = int(np.prod(shape)) if shape else 1
    flat = torch.from_file(str(Path(folder) / descriptor["file"]), shared=True, size=max(numel, 1),
                           dtype=DTYPES[descriptor["dtype"]])
    return flat[:numel].view(shape)


def write_output(folder: Path, name: str, tensor: torch.Tensor) -> dict:
    """Worker side: copy ``tensor`` to the host and write its bytes to ``folder/name.out``; returns its descriptor."""
    host = tensor.detach().to("cpu").contiguous()
    raw = host.reshape(-1).view(torch.uint8) if host.numel() else torch.empty(0, dtype=torch.uint8)
    path = Path(folder) / f"{name}.out"
    raw.numpy().tofile(path)
    return {"file": path.name, "dtype": dtype_name(host.dtype), "shape": list(host.shape),
            "device": tensor.device.type}


def read_output(folder: Path, descriptor: object, max_bytes: int) -> torch.Tensor:
    """Judge side: read one worker output described by ``descriptor`` (untrusted JSON) into judge-owned memory.

    Raises ProtocolError for anything malformed: unknown dtype, bad shape, a name with a path separator, a link,
    a size that does not match the shape, or more than ``max_bytes``.
    """
    if not isinstance(descriptor, dict):
        raise ProtocolError(f"output descriptor is a {type(descriptor).__name__}, expected an object")
    name, dtype, shape = descriptor.get("file"), descriptor.get("dtype"), descriptor.get("shape")
    if not isinstance(name, str) or not name.endswith(".out") or "/" in name or name.startswith("."):
        raise ProtocolError(f"bad output file name {name!r}")
    if dtype not in DTYPES:
        raise ProtocolError(f"bad output dtype {dtype!r}")
    if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape) or len(shape) > 8:
        raise ProtocolError(f"bad output shape {shape!r}")
    torch_dtype = DTYPES[dtype]
    nbytes = int(np.prod(shape, dtype=np.int64)) * torch.empty(0, dtype=torch_dtype).element_size()
    if nbytes > max_bytes:
        raise ProtocolError(f"output of {nbytes} bytes exceeds the {max_bytes}-byte limit")
    try:
        fd = os.open(Path(folder) / name, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as err:
        raise ProtocolError(f"cannot open output {name!r}: {err}") from None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(nbytes + 1)
    if len(data) != nbytes:
        raise ProtocolError(f"output {name!r} has {len(data)} bytes, expected {nbytes} for {dtype}{shape}")
    raw = torch.frombuffer(bytearray(data), dtype=torch.uint8) if nbytes else torch.empty(0, dtype=torch.uint8)
    return raw.view(torch_dtype).reshape(shape)
