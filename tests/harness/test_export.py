"""Single-file export: inlining rules on a synthetic package tree, then the real tracks when present."""
import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ssmkit.harness.export import ExportError, build_single_file, export_track, import_problems
from ssmkit.harness.manifest import package_dir
from ssmkit.harness.scan import scan_source

SYNTHETIC = {
    "ssmkit/__init__.py": '"""Synthetic package."""\n',
    "ssmkit/kernels/__init__.py": "",
    "ssmkit/kernels/scale.py": '''\
        """Kernel module: mentions ssmkit.harness in prose only."""
        import math

        import torch

        SCALE = 2.0


        def scale_rows(x):
            return x * SCALE * math.cos(0.0)
        ''',
    "ssmkit/kernels/shift.py": '''\
        import torch

        from ssmkit.kernels.scale import SCALE, scale_rows


        def shift_rows(x):
            return scale_rows(x) + SCALE
        ''',
    "ssmkit/fast.py": '''\
        from __future__ import annotations

        import torch
        from torch import nn

        from ssmkit.kernels.scale import scale_rows
        from ssmkit.kernels.shift import shift_rows


        class FastThing(nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return shift_rows(x) - scale_rows(x)
        ''',
}


def write_tree(root: Path, files: dict) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def load_file(path: Path):
    """Import a file as the judge's worker does (registered in sys.modules: dataclasses look themselves up)."""
    name = f"exported_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


def test_export_inlines_dependencies_first_and_runs_standalone(tmp_path):
    root = write_tree(tmp_path / "tree", SYNTHETIC)
    source = build_single_file(["ssmkit.fast"], root, "CandidateBlock = FastThing\n")
    assert "from ssmkit" not in source and "import ssmkit" not in source
    order = [source.index(f"# {'-' * 20} ssmkit.{m} ") for m in ("kernels.scale", "kernels.shift", "fast")]
    assert order == sorted(order)
    assert source.index("from __future__ import annotations") < source.index("import torch")
    assert source.count("import torch\n") == 1  # hoisted once
    assert import_problems(source) == [] and scan_source(source) == []
    out = tmp_path / "single.py"
    out.write_text(source)
    # Standalone: a fresh interpreter that cannot see the synthetic tree (or any ssmkit) imports and runs it.
    probe = (f"import importlib.util, torch; s = importlib.util.spec_from_file_location('c', {str(out)!r}); "
             "m = importlib.util.module_from_spec(s); s.loader.exec_module(m); "
             "print(m.CandidateBlock()(torch.ones(2)).tolist())")
    done = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [2.0, 2.0]  # (2x + 2) - 2x


@pytest.mark.parametrize("files, message", [
    ({"ssmkit/kernels/shift.py": "from ssmkit.kernels.scale import scale_rows as sr\n"}, "cannot be inlined"),
    ({"ssmkit/kernels/shift.py": "from .scale import scale_rows\n"}, "relative imports"),
    ({"ssmkit/kernels/shift.py": "import ssmkit.kernels.scale\n"}, "only top-level 'from ssmkit.x.y import name'"),
    ({"ssmkit/kernels/shift.py": "def f():\n    from ssmkit.kernels.scale import SCALE\n"},
     "only top-level 'from ssmkit.x.y import name'"),
    ({"ssmkit/kernels/shift.py": "from ssmkit.kernels.scale import SCALE\nshift_rows = 1\nSCALE2 = SCALE\n"
                                 "def scale_rows():\n    pass\n"}, "top-level name 'scale_rows' is defined in both"),
    ({"ssmkit/kernels/scale.py": "from ssmkit.kernels.shift import shift_rows\n"}, "import cycle"),
    ({"ssmkit/kernels/shift.py": "from ssmkit.kernels.scale import missing_name\n"}, "defines no such top-level"),
    ({"ssmkit/kernels/shift.py": "import numpy as np\ndef shift_rows(x):\n    return x\n"}, "imports numpy"),
    ({"ssmkit/kernels/shift.py": "import torch as tr\nfrom ssmkit.kernels.scale import SCALE\n"
                                 "from ssmkit.kernels.scale import scale_rows\ndef shift_rows(x):\n    pass\n",
      "ssmkit/fast.py": "import triton as torch\nfrom ssmkit.kernels.shift import shift_rows\n"},
     "'torch' is imported as triton here and as torch elsewhere"),
])
def test_export_refuses_what_cannot_be_inlined(tmp_path, files, message):
    root = write_tree(tmp_path / "tree", {**SYNTHETIC, **files})
    with pytest.raises(ExportError, match=message):
        build_single_file(["ssmkit.fast"], root)


def test_export_rejects_unknown_track(tmp_path):
    with pytest.raises(ValueError, match="track must be one of"):
        export_track("mamba2", tmp_path / "x.py")


@pytest.mark.parametrize("track, entry, names", [
    ("granite", "granite/layer.py", ("CandidateBlock", "FastMambaLayer", "GraniteMambaConfig", "MambaCache")),
    ("mamba3", "mamba3/op.py", ("mamba3_siso_varlen_joint_states_full_vjp",)),
])
def test_real_track_exports_to_one_acceptable_file(tmp_path, track, entry, names):
    if not (package_dir() / entry).is_file():
        pytest.skip(f"{entry} is not written yet")
    out = tmp_path / f"{track}.py"
    export_track(track, out)
    source = out.read_text()
    assert import_problems(source) == [] and scan_source(source) == []
    assert "from ssmkit" not in source and "import ssmkit" not in source
    module = load_file(out)
    assert all(hasattr(module, n) for n in names)


GRANITE_PANEL = [
    {"name": "pad_b2", "kind": "prefill", "batch": 2, "lengths": [12, 7], "seed": 1, "purpose": "correctness"},
    {"name": "decode_b2", "kind": "decode", "batch": 2, "prefix": 9, "steps": 2, "seed": 3,
     "purpose": "correctness"},
    {"name": "bench_prefill", "kind": "prefill", "batch": 2, "lengths": [24, 17], "seed": 4, "purpose": "bench"},
    {"name": "bench_decode", "kind": "decode", "batch": 2, "prefix": 8, "steps": 1, "seed": 5, "purpose": "bench"},
]


def test_judge_passes_the_real_granite_export(tmp_path):
    """The exported Granite file through the whole judge on the CPU (tiny config; Triton kernels in the
    interpreter, with the package's interpreter fixes that the worker applies): accepted, correct, timed."""
    if not (package_dir() / "granite/layer.py").is_file():
        pytest.skip("granite/layer.py is not written yet")
    from ssmkit.granite.config import GraniteMambaConfig
    from ssmkit.harness.judge import JudgeOptions, run_granite_judge
    from ssmkit.harness.manifest import compute_manifest

    out, panel, report_path = tmp_path / "granite.py", tmp_path / "panel.json", tmp_path / "report.json"
    export_track("granite", out)
    panel.write_text(json.dumps(GRANITE_PANEL))
    options = JudgeOptions(pairs=1, rotations=1, warmup=0, allow_same_user=True, manifest=compute_manifest(),
                           granite_config=GraniteMambaConfig.tiny())
    code = run_granite_judge(out, panel, report_path, "cpu", options)
    report = json.loads(report_path.read_text())
    assert code == 0, report.get("failure") or report.get("refused") or report.get("error")
    assert report["scan"] == [] and all(c["ok"] for c in report["checks"]) and len(report["workloads"]) == 2


def test_judge_admits_the_real_mamba3_export(tmp_path):
    """The exported Mamba-3 file passes the judge's admission: manifest, source scan, and its worker imports it.
    (Its full gauntlet runs the kernels in Triton's interpreter at about 10 s a call: too slow for this suite.)"""
    if not (package_dir() / "mamba3/op.py").is_file():
        pytest.skip("mamba3/op.py is not written yet")
    from ssmkit.harness.judge import JudgeOptions, _preflight, _Session
    from ssmkit.harness.manifest import compute_manifest

    out = tmp_path / "mamba3.py"
    export_track("mamba3", out)
    options = JudgeOptions(allow_same_user=True, manifest=compute_manifest())
    report = {}
    data = _preflight(out, options, report)
    assert report["scan"] == [] and report["manifest"] == "ok"
    session = _Session("mamba3", options, "cpu")
    try:
        session.start("candidate", "candidate", data)
    finally:
        session.close()
