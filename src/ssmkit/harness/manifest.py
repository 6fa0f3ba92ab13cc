"""Manifest of the judge's fixed parts: sha256 of every file the verdict depends on, checked before each run.

Fixed parts: the whole harness (judge, worker, transport, scan, workloads, comparisons, timing...), the references
and what they import (configs, cache, readout, checkpoint helpers, Mamba-3 shapes/validation/inputs/tolerances),
the package ``__init__`` files on that import path, and the visible data files. The fast implementations
(``granite/layer.py``, ``mamba3/op.py``, ``kernels/``) are not fixed parts: the judge never relies on them.

``harness/manifest.json`` is generated: after changing a fixed file, regenerate it with
``python -m ssmkit.harness.manifest --write`` and commit it. ``python -m ssmkit.harness.manifest`` checks.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

MANIFEST_NAME = "manifest.json"
# Paths relative to the ssmkit package folder; globs cover folders that are fixed as a whole.
FIXED_GLOBS = ("harness/*.py",)
FIXED_FILES = (
    "__init__.py",
    "granite/__init__.py", "granite/config.py", "granite/cache.py", "granite/reference.py", "granite/readout.py",
    "granite/checkpoint.py", "granite/workloads.json", "granite/workloads_cpu.json",
    "mamba3/__init__.py", "mamba3/shapes.py", "mamba3/validate.py", "mamba3/reference.py", "mamba3/inputs.py",
    "mamba3/tolerances.py", "mamba3/cases.json",
    "kernels/__init__.py", "kernels/interpreter.py",  # the worker applies the interpreter fixes on the CPU
)


def package_dir() -> Path:
    """The folder of the imported ``ssmkit`` package."""
    import ssmkit

    return Path(ssmkit.__file__).resolve().parent


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fixed_files(root: Path) -> list[str]:
    """The fixed files present under ``root`` (relative POSIX paths, sorted)."""
    found = {p.relative_to(root).as_posix() for g in FIXED_GLOBS for p in root.glob(g) if p.is_file()}
    found |= {f for f in FIXED_FILES if (root / f).is_file()}
    return sorted(found)


def compute_manifest(root: Path | None = None) -> dict:
    """``{"files": {relative path: sha256}}`` of the fixed files under ``root`` (default: the package)."""
    root = package_dir() if root is None else Path(root)
    return {"files": {rel: _sha256(root / rel) for rel in fixed_files(root)}}


def write_manifest(root: Path | None = None) -> Path:
    """Write ``harness/manifest.json`` for ``root`` (default: the package) and return its path."""
    root = package_dir() if root is None else Path(root)
    path = root / "harness" / MANIFEST_NAME
    path.write_text(json.dumps(compute_manifest(root), indent=1, sort_keys=True) + "\n")
    return path


def check_manifest(root: Path | None = None, manifest: dict | None = None) -> list[str]:
    """Problems with the fixed files under ``root`` against ``manifest`` (default: the committed one); [] = clean.

    Reports a missing or unreadable manifest, every changed or missing file, and fixed files not in the manifest.
    """
    root = package_dir() if root is None else Path(root)
    if manifest is None:
        try:
            manifest = json.loads((root / "harness" / MANIFEST_NAME).read_text())
        except (OSError, ValueError) as err:
            return [f"cannot read the manifest {root / 'harness' / MANIFEST_NAME}: {err}"]
    recorded = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(recorded, dict) or not recorded:
        return ["the manifest lists no files"]
    problems = []
    for rel, digest in sorted(recorded.items()):
        path = root / rel
        if not path.is_file():
            problems.append(f"{rel}: missing")
        elif _sha256(path) != digest:
            problems.append(f"{rel}: changed (sha256 differs from the manifest)")
    problems += [f"{rel}: not in the manifest" for rel in fixed_files(root) if rel not in recorded]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ssmkit.harness.manifest", description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="regenerate harness/manifest.json")
    args = parser.parse_args(argv)
    if args.write:
        print(f"wrote {write_manifest()}")
        return 0
    problems = check_manifest()
    for problem in problems:
        print(problem)
    print("manifest: ok" if not problems else f"manifest: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
