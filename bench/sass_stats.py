"""Offline sm_90 build statistics of a Triton kernel: registers, spill bytes, shared memory, SASS instructions.

Runs Triton's real compiler on this (GPU-less) machine (frontend, LLVM, ptxas for sm_90a, as a launch would), then
cuobjdump on the cubin (registers and local memory per thread from its resource usage). Pointer arguments
named in --bf16 are bf16, ``cu_ptr`` int32, other pointers fp32, all 16-byte aligned; non-pointer arguments not
given as constexprs are i32. Use it to compare two forms of a kernel before spending device time (instruction
count and spills predict the latency-bound kernels' time; bench/mamba3/NOTES.md "Session 4").

  python bench/sass_stats.py ssmkit.kernels.mamba3.bwd _m3b_sides_kernel --warps 4 \
      --const H=32 P=64 N=128 NA=32 C=64 SB=4 PREC='"tf32"'
"""
import argparse
import ast
import importlib
import os
import re
import subprocess
import tempfile

os.environ.pop("TRITON_INTERPRET", None)

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

MAMBA3_BF16 = ("q_ptr k_ptr v_ptr z_ptr trap_ptr ang_ptr dout_ptr dv_ptr dz_ptr dtrap_ptr dang_ptr dq_ptr dk_ptr "
               "dfv_ptr out_ptr fv_ptr angles_ptr").split()


def build_stats(fn, consts: dict, num_warps: int, bf16=MAMBA3_BF16, types=None, options=None,
                aligned=()) -> dict:
    """Compile ``fn`` (a triton.jit function) for sm_90 and return its build statistics. ``types``: argument
    types that override the defaults (e.g. {"rows_ptr": "*i64"}); ``options``: more compile options (e.g.
    {"maxnreg": 128}); ``aligned``: i32 arguments a launch would see divisible by 16 (strides)."""
    consts = {k: v for k, v in consts.items() if k in fn.arg_names}
    sig = {n: "constexpr" if n in consts else ("*bf16" if n in bf16 else "*i32" if n == "cu_ptr" else "*fp32")
           if n.endswith("_ptr") else "i32" for n in fn.arg_names}
    sig.update({k: v for k, v in (types or {}).items() if k in sig})
    # as a launch specializes them: every pointer (and every i32 named in ``aligned``) divisible by 16
    attrs = {(i,): [["tt.divisibility", 16]] for i, n in enumerate(fn.arg_names)
             if sig[n].startswith("*") or (sig[n] == "i32" and n in aligned)}
    src = ASTSource(fn, sig, constexprs={(fn.arg_names.index(k),): v for k, v in consts.items()}, attrs=attrs)
    kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                            options={"num_warps": num_warps, **(options or {})})
    bin_dir = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(kernel.asm["cubin"])
        f.flush()
        sass = subprocess.run([os.path.join(bin_dir, "cuobjdump"), "-sass", f.name], capture_output=True,
                              text=True, check=True).stdout
        usage = subprocess.run([os.path.join(bin_dir, "cuobjdump"), "--dump-resource-usage", f.name],
                               capture_output=True, text=True, check=True).stdout
    ptx = kernel.asm["ptx"]
    return {
        "registers": int(re.search(r"REG:(\d+)", usage).group(1)),
        "local_bytes_per_thread": int(re.search(r"LOCAL:(\d+)", usage).group(1)),
        "shared_bytes": kernel.metadata.shared,
        "sass_instructions": len(re.findall(r"^\s+/\*[0-9a-f]{4,}\*/", sass, flags=re.M)),
        "wgmma": ptx.count("wgmma.mma_async"),
        "mma_sync": ptx.count("mma.sync"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("module")
    ap.add_argument("kernel")
    ap.add_argument("--warps", type=int, default=4)
    ap.add_argument("--const", nargs="*", default=[], help="NAME=python-literal constexprs")
    args = ap.parse_args()
    fn = getattr(importlib.import_module(args.module), args.kernel)
    consts = {k: ast.literal_eval(v) for k, v in (c.split("=", 1) for c in args.const)}
    print(args.kernel, args.warps, "warps", build_stats(fn, consts, args.warps))


if __name__ == "__main__":
    main()
