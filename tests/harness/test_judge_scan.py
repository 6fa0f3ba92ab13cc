"""The judge's source scan: each rule rejects what it names, with the line; prose and own definitions pass."""
import pytest

from ssmkit.harness.scan import RULES, scan_source

REJECTED = [
    ("import ssmkit.harness.worker", "judge-internals"),
    ("from ssmkit import harness", "judge-internals"),
    ("from ssmkit.harness.transport import send_message", "judge-internals"),
    ("import ssmkit\nx = ssmkit.harness", "judge-internals"),
    ("import sys\nw = sys.modules['x']", "judge-internals"),
    ("import os\nos.write(4, b'{}')", "judge-internals"),
    ("from os import fdopen", "judge-internals"),
    ("import sys\nf = sys._getframe(1)", "introspection"),
    ("import inspect", "introspection"),
    ("import gc\nobjs = gc.get_objects()", "introspection"),
    ("def f(frame):\n    return frame.f_back", "introspection"),
    ("fd = open('/proc/self/fd')", "introspection"),
    ("import ctypes", "introspection"),
    ("import time", "clock"),
    ("from time import perf_counter", "clock"),
    ("import datetime", "clock"),
    ("import torch\ne = torch.cuda.Event(enable_timing=True)", "clock"),
    ("from triton.testing import do_bench", "clock"),
    ("import signal", "clock"),
    ("from ssmkit.granite.reference import ReferenceMambaLayer", "baseline"),
    ("import ssmkit.granite\nB = ssmkit.granite.ReferenceMambaLayer", "baseline"),
    ("from ssmkit.mamba3.reference import mamba3_siso_reference", "baseline"),
    ("from ssmkit.mamba3 import reference", "baseline"),
    ("x = eval('1 + 1')", "dynamic-code"),
    ("exec('import time')", "dynamic-code"),
    ("m = __import__('ti' + 'me')", "dynamic-code"),
    ("import importlib", "dynamic-code"),
    ("import subprocess", "dynamic-code"),
    ("import threading\nthreading.Thread(target=print).start()", "dynamic-code"),
    ("from concurrent.futures import ThreadPoolExecutor", "dynamic-code"),
    ("import os\nos.system('true')", "dynamic-code"),
    ("x = ().__class__.__base__.__subclasses__()", "dynamic-code"),
    ("from . import sibling", "relative-import"),
    ("def broken(:\n    pass", "syntax"),
]


@pytest.mark.parametrize("source, rule", REJECTED)
def test_scan_rejects_with_the_rule_and_line(source, rule):
    found = scan_source(source)
    assert rule in {v.rule for v in found}, found
    assert all(v.line >= 1 for v in found)
    assert RULES[rule] in str(next(v for v in found if v.rule == rule))


def test_scan_reports_the_offending_line():
    found = scan_source("import torch\n\n\nimport time\n")
    assert [(v.rule, v.line) for v in found] == [("clock", 4)]


ACCEPTED = [
    '"""Prose may mention ssmkit.harness, sys._getframe, /proc and ssmkit.granite.reference."""\nimport torch',
    "# import time  (a comment)\nimport math",
    "import torch\nimport triton\nimport triton.language as tl\nimport torch.nn.functional as F",
    "class ReferenceMambaLayer:\n    pass\nCandidateBlock = ReferenceMambaLayer",  # an inlined copy, not a delegation
    "import gc\ngc.collect()",
    "import torch\ntorch.cuda.synchronize()",
    "import os\nflag = os.environ.get('TRITON_INTERPRET') == '1'",
    "from ssmkit.granite.layer import FastMambaLayer as CandidateBlock",
]


@pytest.mark.parametrize("source", ACCEPTED)
def test_scan_accepts_ordinary_kernel_code(source):
    assert scan_source(source) == []


def test_allow_reference_lifts_only_the_baseline_rule():
    source = "from ssmkit.granite.reference import ReferenceMambaLayer\nimport time"
    assert {v.rule for v in scan_source(source, allow_reference=True)} == {"clock"}
    assert {v.rule for v in scan_source(source)} == {"baseline", "clock"}
