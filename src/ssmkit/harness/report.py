"""Reports: run metadata, text tables, JSON files and the bench plot.

Every result JSON carries ``run_metadata``: the command, git commit (and whether the tree was dirty), device and
GPU name, torch/triton/python versions and a UTC timestamp.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

import torch

_REPO = Path(__file__).resolve().parents[3]


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(_REPO), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def device_name(device: torch.device | str) -> str:
    """GPU name on CUDA, else 'cpu (<processor>)'."""
    dev = torch.device(device)
    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    return f"cpu ({platform.processor() or platform.machine()})"


def run_metadata(command: Sequence[str] | None, device: torch.device | str) -> dict[str, Any]:
    """Provenance of a run: command, git_commit, git_dirty, device, gpu, torch, triton, python, timestamp.

    ``SSMKIT_GIT_COMMIT``, when set, names the commit and git_dirty is None (the device machine's copy of the tree
    can carry a stale ``.git`` from an earlier call: seen on 2026-11-29, HEAD behind the copied files); otherwise
    git.
    """
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    env_commit = os.environ.get("SSMKIT_GIT_COMMIT")
    status = None if env_commit else _git("status", "--porcelain", "--untracked-files=no")
    return {
        "command": " ".join(command) if command is not None else " ".join(sys.argv),
        "git_commit": env_commit or _git("rev-parse", "HEAD"),
        "git_dirty": None if status is None else bool(status),
        "device": str(device),
        "gpu": device_name(device),
        "torch": torch.__version__,
        "triton": triton_version,
        "python": platform.python_version(),
        "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def emit(line: str) -> None:
    """Print one progress or report line and flush it at once (long runs stay readable in logs)."""
    print(line, flush=True)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "ok" if value else "FAIL"
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:.3e}" if value and abs(value) < 1e-2 else f"{value:.4g}"
    return str(value)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Left-aligned text table; None prints as '-', booleans as ok/FAIL, small floats in e-notation."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


def write_json(path: str | Path, data: dict) -> None:
    """Write ``data`` as indented JSON (non-finite floats become null), creating parent folders."""
    def clean(v):
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        return v

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(clean(data), indent=2) + "\n")


def plot_bench(rows: Sequence[dict], title: str, path: str | Path) -> None:
    """Bar charts of a bench: per-workload times (reference vs candidate, log scale) and speedups.

    ``rows``: dicts with ``name``, ``reference_ms``, ``candidate_ms``, ``speedup`` (None where not measured).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["name"] for r in rows]
    x = range(len(rows))
    fig, (ax_t, ax_s) = plt.subplots(1, 2, figsize=(max(8, 1.6 * len(rows) + 4), 4.5))
    width = 0.4
    for offset, key, label in ((-width / 2, "reference_ms", "reference"), (width / 2, "candidate_ms", "candidate")):
        ax_t.bar([i + offset for i in x], [r.get(key) or 0.0 for r in rows], width, label=label)
    if any((r.get(k) or 0) > 0 for r in rows for k in ("reference_ms", "candidate_ms")):
        ax_t.set_yscale("log")
    ax_t.set_ylabel("time per call (ms, median)")
    ax_t.set_title("times")
    ax_t.legend()
    speedups = [r.get("speedup") or 0.0 for r in rows]
    bars = ax_s.bar(list(x), speedups, color=["tab:green" if s > 1 else "tab:red" for s in speedups])
    ax_s.axhline(1.0, color="black", linewidth=0.8)
    ax_s.bar_label(bars, labels=[f"{s:.2f}x" for s in speedups], fontsize=8)
    ax_s.set_ylabel("speedup (median of paired ratios)")
    ax_s.set_title("speedup of candidate over reference")
    for ax in (ax_t, ax_s):
        ax.set_xticks(list(x))
        ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
