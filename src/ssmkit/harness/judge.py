"""Clean-room judge: ``ssmkit granite judge --candidate FILE`` and ``ssmkit mamba3 judge --solver FILE``.

Rules (in the order they are applied; any failure gives score 0 and names the check):
1. Pristine fixed parts. The references, workload generators, tolerances and the judge come from the installed
   package; their files must match ``harness/manifest.json`` (``ssmkit.harness.manifest``), and the package may
   not sit in the candidate's folder (where it could be shadowed). Otherwise the judge refuses to run (exit 2).
   Only the candidate file carries over: the worker imports a copy of it from its own folder.
2. Source scan (``ssmkit.harness.scan``): judge internals, frame/process introspection, clocks, delegation to
   the timed baseline, hidden code or threads -> rejected with the line and the reason. A missing, unimportable
   or unbuildable candidate also scores 0 with the reason.
3. Isolation (``ssmkit.harness.worker``): candidate code runs only in a worker subprocess (``python -I``, clean
   environment, own folder, fresh ``TRITON_CACHE_DIR``), as ``nobody`` when the judge is root (refused if that is
   impossible, unless explicitly allowed: ``SSMKIT_JUDGE_ALLOW_SAME_USER=1``), with a timeout per request and
   RLIMIT_AS (16 GiB) on the CPU, none on CUDA (the driver reserves far more address space than any useful cap).
   Protocol on private pipes; inputs in host shared memory, which the judge hashes (the worker copies them to its
   device before a call and back after it, both untimed, so writes into inputs show; no CUDA IPC: a worker of
   another user cannot open the handles); outputs read back by the judge, which does every comparison and owns
   every clock. Crash, hang, garbage -> a clean failure naming it. A worker whose user cannot use the device
   (e.g. ``nobody`` without access to the GPU device files) is found before any candidate code runs: refused.
4. Correctness gauntlet: every correctness workload, with ``granite verify``'s runs and checks
   (``granite_run.run_workload``, ``granite_verify.compare_runs``: outputs of every call, final conv_state and
   ssm_state, readout logits and KL, bounds calibrated from the bf16 reference's own error against the fp32 run,
   ``cache.in_place``) or ``mamba3 selfcheck``'s (``check_results``: all 16 results, ``ssmkit.mamba3.tolerances``);
   input immutability (inputs hashed before and after every call) and fresh calls (the same inputs twice give
   bitwise the same results). Then the timed path is validated at the benchmark shapes, on every rotated input
   set (Mamba-3: every case is a benchmark case).
5. Timing: per workload, paired A/B/B/A between the reference (the starter, in its own worker) and the candidate,
   on the judge's wall clock around one synchronised ``call`` request; a live no-op floor (the fastest of a few
   no-op requests just before each call, median per worker) is subtracted; input sets rotate between calls (the
   judge rewrites the same shared buffers; the worker's device copies are made afresh before every call, so a
   cache keyed by input identity returns stale results). Warm-up calls
   come first (Triton compiles and autotunes there); then the worker's Triton cache is made read-only. Every
   timed output is digested by the judge and must equal the digest validated for that input set. Speedup =
   median over pairs of reference_ms / candidate_ms; the spread between pairs is reported and timing is flagged
   unstable above ``JudgeOptions.unstable_spread``.
6. Score: G = geometric mean of per-workload speedups. Granite: 0 if G <= 1 else 1 - 1/G. Mamba-3: G.
Exit codes: 0 passed, 1 failed (score 0), 2 nothing scored: refused (fixed parts changed, isolation impossible, bad
panel file, a worker that cannot start or cannot use the device, inputs that cannot reach the worker, the
reference failing) or a judge error (reported with its traceback).
On the CPU (a test mode: real timings need a GPU) Triton kernels run in its interpreter, with the package's fixes
for the interpreter's bf16 defects (``ssmkit.kernels.interpreter``, a fixed part) applied by the worker.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import statistics
import tempfile
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from ssmkit.granite.cache import MambaCache
from ssmkit.granite.reference import ieee_fp32
from ssmkit.harness.compare import Check, digest_all, tensor_digest
from ssmkit.harness.granite_run import (
    Readout,
    RunResult,
    build_layer,
    cast_inputs,
    default_slice,
    make_inputs,
    run_workload,
)
from ssmkit.harness.granite_verify import compare_runs
from ssmkit.harness.mamba3_selfcheck import call_args, check_results
from ssmkit.harness.manifest import check_manifest, package_dir
from ssmkit.harness.report import emit, format_table, run_metadata, write_json
from ssmkit.harness.scan import scan_source
from ssmkit.harness.timing import PairedTiming, abba_schedule, geomean, score_from_geomean
from ssmkit.harness.transport import exchange_root
from ssmkit.harness.worker import (
    IsolationError,
    TransportError,
    WorkerFailure,
    WorkerProcess,
    resolve_worker_user,
)
from ssmkit.harness.workloads import (
    DECODE,
    PrefillInputs,
    cpu_cases,
    default_cases_path,
    default_workloads_path,
    load_cases,
    load_workloads,
    select,
)
from ssmkit.mamba3.shapes import COTANGENT_NAMES, INPUT_NAMES

ALLOW_SAME_USER_ENV = "SSMKIT_JUDGE_ALLOW_SAME_USER"
ROTATION_SEED_STRIDE = 7919  # Mamba-3 input set r of a case uses seed + r * stride
FLOOR_SAMPLES = 3  # no-op requests before each timed call; the fastest is that call's floor


@dataclass
class JudgeOptions:
    """Knobs of one judge run. The command line uses the defaults; tests shrink them.

    ``allow_reference`` lifts the scan's baseline rule so the judge's own tests can submit the reference as a
    candidate (never exposed on the command line). ``manifest`` replaces the committed manifest (tests only).
    ``granite_config`` replaces the real Granite config (tests use ``GraniteMambaConfig.tiny()``); the weights are
    always ``granite_run.default_slice`` (the synthetic slice, seed 0) of that config.
    """

    pairs: int = 5
    rotations: int = 3
    warmup: int = 2
    start_timeout: float = 300.0
    build_timeout: float = 900.0
    call_timeout: float = 600.0
    memory_cap_bytes: int | None = None  # None: 16 GiB on the CPU, no cap on CUDA
    unstable_spread: float = 0.5
    allow_same_user: bool = field(default_factory=lambda: os.environ.get(ALLOW_SAME_USER_ENV) == "1")
    allow_reference: bool = False
    manifest: dict | None = None
    granite_config: Any = None
    max_output_bytes: int = 8 << 30


class Rejected(Exception):
    """The candidate failed ``check``; ``reason`` says why."""

    def __init__(self, check: str, reason: str):
        super().__init__(f"{check}: {reason}")
        self.check, self.reason = check, reason


class Refused(Exception):
    """The judge cannot run fairly (changed fixed parts, no isolation, bad panel); nothing is scored."""


def _first_failure(checks: list[Check]) -> None:
    for c in checks:
        if not c.ok:
            detail = c.note if c.error is None else f"error {c.error:.3e} > bound {c.bound:.3e}" + (
                f" ({c.note})" if c.note else "")
            raise Rejected(f"{c.workload} {c.quantity}", detail)


# ------------------------------------------------------------------------------------------ one worker step
class _Session:
    """What every track needs: options, device, the run folder, the worker user, and worker bookkeeping."""

    def __init__(self, track: str, options: JudgeOptions, device: str):
        self.track, self.options, self.device = track, options, torch.device(device)
        self.user, self.isolation_note = resolve_worker_user(options.allow_same_user)
        self.run_dir = Path(tempfile.mkdtemp(prefix="ssmkit-judge-", dir=exchange_root()))
        self.run_dir.chmod(0o711)
        self.workers: list[WorkerProcess] = []
        cap = options.memory_cap_bytes
        self.memory_cap = cap if cap is not None else (0 if self.device.type == "cuda" else 16 << 30)
        self.peak_mem: dict[str, int | None] = {}

    def start(self, role: str, source: str, candidate_bytes: bytes | None = None) -> WorkerProcess:
        """Start a worker and load the candidate (``source='candidate'``) or the package's reference."""
        emit(f"[judge] starting the {role} worker ({self.user.name})")
        try:
            worker = WorkerProcess(role, self.run_dir, str(self.device), self.user, self.memory_cap,
                                   self.options.start_timeout)
        except WorkerFailure as err:  # before any candidate code runs: the judge's environment is at fault
            raise Refused(f"cannot start the {role} worker: {err.reason}\n{err.detail}".strip()) from None
        self.workers.append(worker)
        message = {"op": "load", "track": self.track, "source": source}
        if candidate_bytes is not None:
            message["path"] = str(worker.add_file("candidate.py", candidate_bytes))
        try:
            worker.request(message, self.options.build_timeout)
        except WorkerFailure as err:
            raise Rejected("import", f"{err.reason}\n{err.detail}".strip()) from None
        return worker

    def close(self) -> None:
        for worker in self.workers:
            worker.close()
        shutil.rmtree(self.run_dir, ignore_errors=True)

    def step(self, worker: WorkerProcess, track, inputs, what: str,
             floor_samples: int = 0) -> tuple[dict[str, torch.Tensor], float, float | None]:
        """Stage ``inputs``, run one ``call`` timed on the judge's wall clock, fetch the outputs, check inputs.

        With ``floor_samples`` > 0, that many no-op requests are timed just before the call (after staging, so
        they see the same state) and the fastest is the floor. Returns (outputs on the judge's device, seconds
        of the call request, floor seconds or None). Raises Rejected on a failed request or changed inputs.
        """
        timeout = self.options.call_timeout
        floor = None
        try:
            names = track.stage(worker, inputs, timeout)
            before = {n: tensor_digest(worker.inputs.slots[n]) for n in names}
            if self.device.type == "cuda":  # none of the judge's own GPU work may overlap the call
                torch.cuda.synchronize(self.device)
            for _ in range(floor_samples):
                start = time.perf_counter()
                worker.request({"op": "noop"}, timeout)
                elapsed = time.perf_counter() - start
                floor = elapsed if floor is None else min(floor, elapsed)
            start = time.perf_counter()
            worker.request({"op": "call"}, timeout)
            elapsed = time.perf_counter() - start
            outputs = worker.fetch(timeout, self.options.max_output_bytes)
        except TransportError as err:
            raise Refused(f"inputs could not reach the {worker.role} worker: {err.reason}\n{err.detail}") from None
        except WorkerFailure as err:
            raise Rejected(what, f"{err.reason}\n{err.detail}".strip()) from None
        changed = [n for n in names if tensor_digest(worker.inputs.slots[n]) != before[n]]
        if changed:
            raise Rejected(f"{what} input immutability", f"the call wrote into its inputs {changed}")
        devices = worker.last_fetch_devices
        wrong = {n: d for n, d in devices.items() if d != self.device.type}
        if wrong:
            raise Rejected(f"{what} device", f"outputs on the wrong device {wrong}, expected {self.device.type}")
        self.peak_mem[worker.role] = worker.last_peak_mem
        return {n: t.to(self.device) for n, t in outputs.items()}, elapsed, floor


# ------------------------------------------------------------------------------------------------ Granite
class _GraniteTrack:
    """Granite specifics: weights, staging a layer call, the candidate's chained runs, panel handling.

    Reference and fp32 runs and every comparison are ``granite verify``'s (``granite_run.run_workload``,
    ``granite_verify.compare_runs``): the judge checks the same quantities with the same calibrated bounds.
    """

    name = "granite"

    def __init__(self, options: JudgeOptions, device: torch.device):
        from ssmkit.granite.reference import ReferenceMambaLayer

        self.device = device
        self.slice = default_slice(options.granite_config)
        self.config = self.slice.config
        self.ref = build_layer(ReferenceMambaLayer, self.slice, device, torch.bfloat16)
        self.ref32 = build_layer(ReferenceMambaLayer, self.slice, device, torch.float32)
        self.readout16 = Readout.from_slice(self.slice, device)
        self.readout32 = Readout.from_slice(self.slice, device, torch.float32)

    # ---- worker side
    def build(self, worker: WorkerProcess, options: JudgeOptions) -> None:
        slots = {param: "w_" + param.replace(".", "__") for param in self.slice.mamba}
        for param, slot in slots.items():
            worker.put(slot, self.slice.mamba[param].to(self.device))
        try:
            worker.map_inputs(options.build_timeout)
            worker.request({"op": "build", "config": self.config.to_dict(), "weights": slots,
                            "dtype": "bfloat16"}, options.build_timeout)
        except TransportError as err:
            raise Refused(f"inputs could not reach the {worker.role} worker: {err.reason}\n{err.detail}") from None
        except WorkerFailure as err:
            raise Rejected("build", f"{err.reason}\n{err.detail}".strip()) from None

    @staticmethod
    def stage(worker: WorkerProcess, inputs: tuple, timeout: float) -> list[str]:
        """inputs = (hidden, mask or None, cache or None); cache = (conv_state, ssm_state, seqlen_offset)."""
        hidden, mask, cache = inputs
        message: dict = {"op": "prepare", "hidden": "hidden", "mask": None, "cache": None}
        worker.put("hidden", hidden)
        names = ["hidden"]
        if mask is not None:
            worker.put("mask", mask)
            message["mask"] = "mask"
            names.append("mask")
        if cache is not None:
            worker.put("cache_conv", cache[0])
            worker.put("cache_ssm", cache[1])
            message["cache"] = {"conv": "cache_conv", "ssm": "cache_ssm", "seqlen_offset": int(cache[2])}
            names += ["cache_conv", "cache_ssm"]
        worker.map_inputs(timeout)
        worker.request(message, timeout)
        return names

    # ---- judge side
    @staticmethod
    def load_panel(path: Path | None, device: torch.device) -> list:
        path = default_workloads_path(str(device)) if path is None else path
        workloads = load_workloads(path)
        if not select(workloads, "bench"):
            raise ValueError(f"{path}: no bench workloads to time")
        return workloads

    def correctness_items(self, panel: list) -> list:
        return select(panel, "correctness")

    def bench_items(self, panel: list) -> list:
        return select(panel, "bench")

    def workload_name(self, w) -> str:
        return w.name

    def _references(self, w, inputs) -> tuple[RunResult, RunResult]:
        """(bf16 reference run, fp32 run with TF32 off) of workload ``w``, as ``granite verify`` makes them."""
        ref = run_workload(self.ref, w, inputs, self.readout16)
        with ieee_fp32(self.device.type == "cuda"):
            truth = run_workload(self.ref32, w, cast_inputs(inputs, torch.float32), self.readout32)
        return ref, truth

    def _candidate_run(self, session: _Session, worker: WorkerProcess, w, inputs) -> RunResult:
        """The candidate through the worker, call by call as ``run_workload`` does, carrying its own cache."""
        if isinstance(inputs, PrefillInputs):
            steps = [("prefill", inputs.hidden, inputs.mask)] + [
                (f"continue{i}", h, None) for i, h in enumerate(inputs.continuations)]
        else:
            steps = [("prefix", inputs.prefix, None)] + [(f"decode{i}", t, None) for i, t in enumerate(inputs.tokens)]
        result, cache, offset, outs = RunResult(), None, 0, []
        for index, (step, x, mask) in enumerate(steps):
            what = f"{w.name} {step}"
            out, _, _ = session.step(worker, self, (x, mask, cache), what)
            if index == 0:
                again, _, _ = session.step(worker, self, (x, mask, cache), what)
                if digest_all(again) != digest_all(out):
                    raise Rejected(f"{what} fresh call", "two calls with the same inputs gave different results")
            if out["out"].shape != x.shape:
                raise Rejected(f"{what} output", f"shape {tuple(out['out'].shape)}, expected {tuple(x.shape)}")
            result.cache_in_place &= cache is None or worker.last_meta.get("cache_in_place") is True
            offset += x.shape[1]
            cache = (out["conv_state"], out["ssm_state"], offset)
            outs.append(out["out"])
        t = result.tensors
        if isinstance(inputs, PrefillInputs):
            t["output"] = outs[0]
            t.update({f"continue{i}.output": o for i, o in enumerate(outs[1:])})
            logits = self.readout16(outs[-1])
        else:
            t["prefix_output"], t["output"] = outs[0], torch.cat(outs[1:], dim=1)
            logits = torch.cat([self.readout16(o) for o in outs[1:]], dim=0)
        t["conv_state"], t["ssm_state"], t["logits"] = cache[0], cache[1], logits
        return result

    def gauntlet(self, session: _Session, worker: WorkerProcess, w) -> list[Check]:
        """One correctness workload: the candidate's run against the reference's and the fp32 run."""
        inputs = make_inputs(w, self.config.hidden_size, self.device)
        ref, truth = self._references(w, inputs)
        checks = compare_runs(w.name, self._candidate_run(session, worker, w, inputs), ref, truth)
        _first_failure(checks)
        return checks

    def _single_step(self, layer, inputs: tuple, dtype: torch.dtype, readout: Readout) -> RunResult:
        """One decode step of ``layer`` from a copy of the cache in ``inputs``, as a RunResult."""
        hidden, mask, (conv, ssm, offset) = inputs
        cache = MambaCache(conv_state=conv.to(dtype, copy=True), ssm_state=ssm.clone(), has_previous_state=True,
                           seqlen_offset=offset)  # copies: the layer updates them in place
        with torch.no_grad(), ieee_fp32(self.device.type == "cuda" and dtype == torch.float32):
            out, cache = layer(hidden.to(dtype), cache=cache, attention_mask=mask)
            logits = readout(out)
        return RunResult({"output": out, "conv_state": cache.conv_state, "ssm_state": cache.ssm_state,
                          "logits": logits})

    def bench_sets(self, w, rotations: int) -> list[dict]:
        """Input sets of a bench workload's timed call, with the reference's and the fp32 run's results.

        Prefill: the full (padded) prefill, without any continuation. Decode: one single-token step from the cache
        of a reference prefill of the prefix (the same cache for both sides; the fp32 run starts from its copy).
        """
        sets = []
        for r in range(rotations):
            if w.kind == DECODE:
                data = make_inputs(w, self.config.hidden_size, self.device, rotation=r)
                with torch.no_grad():
                    _, prefix_cache = self.ref(data.prefix, cache=None)
                inputs = (data.tokens[0], None, (prefix_cache.conv_state, prefix_cache.ssm_state,
                                                 prefix_cache.seqlen_offset))
                ref = self._single_step(self.ref, inputs, torch.bfloat16, self.readout16)
                truth = self._single_step(self.ref32, inputs, torch.float32, self.readout32)
            else:
                w = replace(w, continuations=())
                data = make_inputs(w, self.config.hidden_size, self.device, rotation=r)
                inputs = (data.hidden, data.mask, None)
                ref, truth = self._references(w, data)
            sets.append({"inputs": inputs, "ref": ref, "truth": truth})
        return sets

    def validate(self, name: str, outputs: dict, s: dict) -> list[Check]:
        """Checks of the candidate's timed-call outputs on one bench input set."""
        cand = RunResult({"output": outputs["out"], "conv_state": outputs["conv_state"],
                          "ssm_state": outputs["ssm_state"], "logits": self.readout16(outputs["out"])})
        return compare_runs(name, cand, s["ref"], s["truth"])


# ------------------------------------------------------------------------------------------------ Mamba-3
class _Mamba3Track:
    """Mamba-3 specifics: 17 named inputs per case, 16 results checked as ``mamba3 selfcheck`` does."""

    name = "mamba3"
    arg_names = INPUT_NAMES + COTANGENT_NAMES

    def __init__(self, options: JudgeOptions, device: torch.device):
        from ssmkit.mamba3.reference import mamba3_siso_varlen_joint_states_full_vjp_reference

        self.device, self.reference = device, mamba3_siso_varlen_joint_states_full_vjp_reference

    def build(self, worker: WorkerProcess, options: JudgeOptions) -> None:
        """Nothing to build: the solver is a function."""

    def stage(self, worker: WorkerProcess, inputs: dict, timeout: float) -> list[str]:
        for name in self.arg_names:
            worker.put(name, inputs[name])
        worker.map_inputs(timeout)
        worker.request({"op": "prepare", "args": list(self.arg_names)}, timeout)
        return list(self.arg_names)

    def inputs(self, case, rotation: int) -> dict:
        from ssmkit.mamba3.inputs import make_inputs as make_mamba3_inputs

        return make_mamba3_inputs(list(case.seqlens), case.seed + ROTATION_SEED_STRIDE * rotation, str(self.device))

    @staticmethod
    def load_panel(path: Path | None, device: torch.device) -> list:
        if path is None:
            cases = load_cases(default_cases_path())
            return cases if device.type == "cuda" else cpu_cases(cases)
        return load_cases(path)

    def correctness_items(self, panel: list) -> list:
        return panel

    def bench_items(self, panel: list) -> list:
        return panel

    def workload_name(self, case) -> str:
        return case.name

    @staticmethod
    def _results(outputs: dict) -> list:
        return [outputs[f"r{i}"] for i in range(len(outputs))]

    def gauntlet(self, session: _Session, worker: WorkerProcess, case) -> list[Check]:
        inputs = self.inputs(case, 0)
        ref = self.reference(*call_args(inputs))
        cand, _, _ = session.step(worker, self, inputs, case.name)
        again, _, _ = session.step(worker, self, inputs, case.name)
        if digest_all(again) != digest_all(cand):
            raise Rejected(f"{case.name} fresh call", "two calls with the same inputs gave different results")
        checks = check_results(case.name, self._results(cand), ref)
        _first_failure(checks)
        return checks

    def bench_sets(self, case, rotations: int) -> list[dict]:
        sets = []
        for r in range(rotations):
            inputs = self.inputs(case, r)
            sets.append({"inputs": inputs, "ref": self.reference(*call_args(inputs))})
        return sets

    def validate(self, name: str, outputs: dict, s: dict) -> list[Check]:
        return check_results(name, self._results(outputs), s["ref"])


# ------------------------------------------------------------------------------------------- the procedure
def _validate_timed_path(session: _Session, track, worker: WorkerProcess, item, sets: list[dict]) -> list[Check]:
    """Candidate on every input set of a bench workload: within tolerance; remembers each set's digest."""
    checks = []
    name = track.workload_name(item)
    for r, s in enumerate(sets):
        outputs, _, _ = session.step(worker, track, s["inputs"], f"{name} bench-shape validation (input set {r})")
        found = track.validate(f"{name} set{r}", outputs, s)
        checks += found
        try:
            _first_failure(found)
        except Rejected as err:
            raise Rejected(f"bench-shape validation: {err.check}", err.reason) from None
        s["digest"] = digest_all(outputs)
    return checks


def _time_workload(session: _Session, track, ref_worker: WorkerProcess, cand_worker: WorkerProcess, item,
                   sets: list[dict]) -> dict:
    """Paired ABBA timing of one workload (see the module docstring); returns its JSON row."""
    opts, name = session.options, track.workload_name(item)
    calls = {"a": 0, "b": 0}

    def timed(side: str) -> tuple[float, float]:
        worker = ref_worker if side == "a" else cand_worker
        index = calls[side]
        calls[side] += 1
        s = sets[index % len(sets)]
        try:
            outputs, elapsed, floor = session.step(worker, track, s["inputs"], f"{name} timed call {index}",
                                                   floor_samples=FLOOR_SAMPLES)
        except Rejected as err:
            if side == "a":  # the baseline failing (e.g. out of memory) is the judge's problem, not the candidate's
                raise Refused(f"the reference worker failed: {err}") from None
            raise
        if side == "b" and digest_all(outputs) != s["digest"]:
            raise Rejected(f"{name} timed-call digest",
                           f"call {index} (input set {index % len(sets)}) returned output that differs from "
                           f"the validated output for those inputs")
        return elapsed * 1e3, floor * 1e3

    for side in ("a", "b"):
        for _ in range(opts.warmup):
            timed(side)
    for worker in (ref_worker, cand_worker):
        worker.freeze_triton_cache()
    raw: dict[str, list[float]] = {"a": [], "b": []}
    floors: dict[str, list[float]] = {"a": [], "b": []}
    for order in abba_schedule(opts.pairs):
        for side in order:
            ms, floor_ms = timed(side)
            raw[side].append(ms)
            floors[side].append(floor_ms)
    floor = {side: statistics.median(v) for side, v in floors.items()}
    result = PairedTiming()
    for a_ms, b_ms in zip(raw["a"], raw["b"]):
        a, b = max(a_ms - floor["a"], 1e-6), max(b_ms - floor["b"], 1e-6)
        result.a_ms.append(a)
        result.b_ms.append(b)
        result.ratios.append(a / b)
    spread = result.spread
    return {"name": name, "reference_ms": result.a_median_ms, "candidate_ms": result.b_median_ms,
            "speedup": result.speedup, "spread": spread, "unstable": spread > opts.unstable_spread,
            "floor_ms": floor, "pair_ratios": result.ratios, "peak_mem_bytes": session.peak_mem.get("candidate")}


def _readable_by(path, user) -> bool | None:
    """Can the worker's user read the hidden panel file by its mode bits? None: same user or default panel."""
    if path is None or user.uid is None:
        return None
    st = os.stat(path)
    return bool(st.st_mode & 0o004 or (st.st_uid == user.uid and st.st_mode & 0o400)
                or (st.st_gid == user.gid and st.st_mode & 0o040))


def _preflight(candidate: Path, options: JudgeOptions, report: dict) -> bytes:
    """Manifest and shadowing checks (Refused), then the candidate's presence and source scan (Rejected)."""
    problems = check_manifest(manifest=options.manifest)
    report["manifest"] = problems or "ok"
    if problems:
        raise Refused("fixed parts differ from the manifest: " + "; ".join(problems))
    if package_dir().parent == candidate.resolve().parent:
        raise Refused(f"the ssmkit package at {package_dir()} sits in the candidate's folder; install it elsewhere")
    if not candidate.is_file():
        raise Rejected("candidate file", f"not found: {candidate}")
    data = candidate.read_bytes()
    report["candidate_sha256"] = hashlib.sha256(data).hexdigest()
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise Rejected("source scan", f"not UTF-8: {err}") from None
    violations = scan_source(source, str(candidate), allow_reference=options.allow_reference)
    report["scan"] = [str(v) for v in violations]
    if violations:
        raise Rejected("source scan", "; ".join(str(v) for v in violations))
    return data


def _judge(track_name: str, candidate, panel, json_out, device, options: JudgeOptions | None) -> int:
    options = options or JudgeOptions()
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    candidate = Path(candidate)
    report: dict = {"track": track_name, "candidate": str(candidate), **run_metadata(None, device), "checks": [],
                    "workloads": [], "geomean": None, "score": 0.0, "passed": False}
    session = None
    try:
        data = _preflight(candidate, options, report)
        track_cls = _GraniteTrack if track_name == "granite" else _Mamba3Track
        try:
            panel_items = track_cls.load_panel(Path(panel) if panel else None, device)
        except (OSError, ValueError) as err:
            raise Refused(f"bad panel file: {err}") from None
        try:
            session = _Session(track_name, options, str(device))
        except IsolationError as err:
            raise Refused(str(err)) from None
        report["isolation"] = {"user": session.user.name, "note": session.isolation_note,
                               "memory_cap_bytes": session.memory_cap or None,
                               "panel_readable_by_worker": _readable_by(panel, session.user)}
        emit(f"[judge] {track_name}: {session.isolation_note}")
        if report["isolation"]["panel_readable_by_worker"]:
            emit(f"[judge] WARNING: the worker's user can read the panel file {panel} (e.g. chmod 600 it)")
        cand = session.start("candidate", "candidate", data)  # first: a worker that cannot use the device refuses
        track = track_cls(options, device)
        track.build(cand, options)
        for item in track.correctness_items(panel_items):
            emit(f"[judge] correctness: {track.workload_name(item)}")
            report["checks"] += [c.as_dict() for c in track.gauntlet(session, cand, item)]
        bench = [(item, track.bench_sets(item, options.rotations)) for item in track.bench_items(panel_items)]
        for item, sets in bench:
            emit(f"[judge] bench-shape validation: {track.workload_name(item)}")
            report["checks"] += [c.as_dict() for c in _validate_timed_path(session, track, cand, item, sets)]
        try:
            ref_worker = session.start("reference", "reference")
            track.build(ref_worker, options)
        except Rejected as err:
            raise Refused(f"the reference worker failed: {err}") from None
        for item, sets in bench:
            row = _time_workload(session, track, ref_worker, cand, item, sets)
            emit(f"[judge] timed {row['name']}: reference {row['reference_ms']:.3f} ms, candidate "
                 f"{row['candidate_ms']:.3f} ms, speedup {row['speedup']:.3f}x, spread {row['spread']:.2f}"
                 + (" (UNSTABLE)" if row["unstable"] else ""))
            report["workloads"].append(row)
        g = geomean([row["speedup"] for row in report["workloads"]])
        report["geomean"] = g
        report["score"] = score_from_geomean(g) if track_name == "granite" else g
        report["passed"] = True
        report["unstable"] = any(row["unstable"] for row in report["workloads"])
        report["verdict"] = (f"VERDICT: PASS {track_name} score={report['score']:.4f} G={g:.4f}"
                             + (" (timing unstable)" if report["unstable"] else ""))
        code = 0
    except Rejected as err:
        report["failure"] = {"check": err.check, "reason": err.reason}
        report["verdict"] = f"VERDICT: FAIL {track_name} score=0 ({err.check}: {err.reason.splitlines()[0]})"
        code = 1
    except Refused as err:
        report["refused"] = str(err)
        report["verdict"] = f"VERDICT: REFUSED {track_name} (nothing scored): {str(err).splitlines()[0]}"
        code = 2
    except Exception as err:  # noqa: BLE001 - a judge bug must still end in a verdict and a report
        report["error"] = traceback.format_exc()
        report["verdict"] = f"VERDICT: ERROR {track_name} (judge failure, nothing scored): {type(err).__name__}: {err}"
        code = 2
    finally:
        if session is not None:
            session.close()
    if report["workloads"]:
        emit(format_table(["workload", "reference_ms", "candidate_ms", "speedup", "spread", "timing"],
                          [[w["name"], w["reference_ms"], w["candidate_ms"], w["speedup"], w["spread"],
                            "UNSTABLE" if w["unstable"] else "stable"] for w in report["workloads"]]))
    if json_out:
        write_json(json_out, report)
    emit(report["verdict"])
    return code


def run_granite_judge(candidate, workloads, json_out, device, options: JudgeOptions | None = None) -> int:
    """Judge a Granite candidate file (defines ``CandidateBlock``, same constructor/forward as
    ReferenceMambaLayer) on the workload panel ``workloads`` (None: the package's default for the device).
    Writes ``json_out`` (if given), prints a final ``VERDICT:`` line, returns 0 pass / 1 fail / 2 refused."""
    return _judge("granite", candidate, workloads, json_out, device, options)


def run_mamba3_judge(solver, cases, json_out, device, options: JudgeOptions | None = None) -> int:
    """Judge a Mamba-3 solver file (defines ``mamba3_siso_varlen_joint_states_full_vjp``) on the case panel
    ``cases`` (None: the package's cases, shortened on the CPU). Same outputs and exit codes as the Granite judge."""
    return _judge("mamba3", solver, cases, json_out, device, options)
