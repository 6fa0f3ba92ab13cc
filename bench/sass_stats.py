"""Offline sm_90 build statistics of a Triton kernel: registers, spills, shared memory, SASS instructions, loops.

Runs Triton's real compiler on this (GPU-less) machine (frontend, LLVM, ptxas for sm_90a, as a launch would), then
cuobjdump on the cubin (registers, and the stack that holds spilled registers, per thread from its resource
usage). Pointer arguments named in --bf16 are bf16, ``cu_ptr`` int32, other pointers fp32, all 16-byte aligned;
non-pointer arguments not given as constexprs are i32, divisible by 16 only when named in --aligned. Mark every
integer a launch sees divisible by 16 (Triton specialises those), or the build is not the one the GPU runs: the
Granite chunk-state kernel with its batch strides and ``nheads`` unmarked loads x and B with 97 scalar 16-bit
loads per token block and spills in its loop, marked with 12 16-byte loads and no loop spills
(bench/granite/NOTES.md "Session 10"). Use it to compare two forms of a kernel before spending device time
(instruction count and spills predict the latency-bound kernels' time; bench/mamba3/NOTES.md "Session 4"); the
``loop_bodies`` (instructions between each backward branch and its target) give the per-iteration cost, which the
static total hides; ``--lines N`` lists the N source lines with the most SASS instructions (where a kernel's
instructions go: bench/mamba3/NOTES.md "Session 15").

  python bench/sass_stats.py ssmkit.kernels.mamba3.bwd _m3b_sides_kernel --warps 4 --types io_ptr='*i64' \\
      --const H=32 P=64 N=128 NA=32 C=64 SB=4 PREC='"tf32"' V_WORD=-1
  python bench/sass_stats.py ssmkit.kernels.granite.ssd_prefill _ssd_chunk_state_kernel --maxnreg 128 \\
      --stages 2 --bf16 xbc_ptr dt_ptr --types rows_ptr='*i64' mask_ptr='*u8' \\
      --aligned stride_xb stride_xl stride_db stride_dl nheads seqlen nchunks \\
      --const P=64 N=128 CH=256 BLOCK_K=64 HAS_MASK=False ROUND_DT=True STORE_CB=True CB_SPREAD=True PREC=0 \\
      SPLIT_STATE=True PACKED=False
"""
import argparse
import ast
import collections
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
               "dfv_ptr out_ptr fv_ptr angles_ptr mg_ptr dy_ptr").split()


_MEMORY_OPS = ("LDG", "STG", "LDS", "STS", "LDSM", "STSM", "LDL", "STL", "SHFL", "ATOM", "RED", "BAR", "LDGSTS")


def build_stats(fn, consts: dict, num_warps: int, bf16=MAMBA3_BF16, types=None, options=None,
                aligned=(), by_line: bool = False) -> dict:
    """Compile ``fn`` (a triton.jit function) for sm_90 and return its build statistics. ``types``: argument
    types that override the defaults (e.g. {"rows_ptr": "*i64"}); ``options``: more compile options (e.g.
    {"maxnreg": 128}); ``aligned``: i32 arguments a launch would see divisible by 16 (strides); ``by_line``: also
    count the instructions per source line (nvdisasm; else ``by_line`` is empty)."""
    unknown = sorted((set(consts) | set(types or {}) | set(aligned)) - set(fn.arg_names))
    if unknown:  # (a typo would otherwise build another kernel than the one meant, silently)
        raise ValueError(f"{fn.__name__} has no argument(s) {unknown}")
    sig = {n: "constexpr" if n in consts else ("*bf16" if n in bf16 else "*i32" if n == "cu_ptr" else "*fp32")
           if n.endswith("_ptr") else "i32" for n in fn.arg_names}
    sig.update(types or {})
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
        lines = "" if not by_line else subprocess.run(
            [os.path.join(bin_dir, "nvdisasm"), "--print-line-info", "--print-code", f.name],
            capture_output=True, text=True, check=True).stdout
    ptx = kernel.asm["ptx"]
    instructions = _sass_instructions(sass)
    opcodes = [text.split()[1 if text.startswith("@") else 0] for _, text in instructions]
    return {
        "registers": int(re.search(r"REG:(\d+)", usage).group(1)),
        "stack_bytes_per_thread": int(re.search(r"STACK:(\d+)", usage).group(1)),  # spilled registers live here
        "local_bytes_per_thread": int(re.search(r"LOCAL:(\d+)", usage).group(1)),
        "spill_instructions": sum(op.startswith(("LDL", "STL")) for op in opcodes),
        "shared_bytes": kernel.metadata.shared,
        "sass_instructions": len(instructions),
        "loop_bodies": _loop_bodies(instructions),
        "global_loads": dict(collections.Counter(op for op in opcodes if op.startswith("LDG"))),
        # instructions of the memory (LSU / MIO) pipes: global, shared and local accesses, shuffles, barriers
        "memory_ops": dict(collections.Counter(op for op in opcodes if op.startswith(_MEMORY_OPS))),
        "wgmma": ptx.count("wgmma.mma_async"),
        "mma_sync": ptx.count("mma.sync"),
        "by_line": _instructions_by_line(lines),
    }


def _instructions_by_line(listing: str) -> list[tuple[str, int, dict]]:
    """SASS instructions per source line, most first, from nvdisasm's --print-line-info listing: ("file:line",
    count, {opcode: count} of its five commonest opcodes). Inlined helpers count at their own lines (tl.sum's
    combine at triton/language/standard.py, for instance), summed over every call site."""
    counts, ops, where = collections.Counter(), collections.defaultdict(collections.Counter), "?"
    for line in listing.splitlines():
        loc = re.search(r'//## File "([^"]+)", line (\d+)', line)
        if loc:
            where = f"{os.path.basename(loc.group(1))}:{loc.group(2)}"
            continue
        op = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)((?:\.\w+)*)", line)
        if op:
            counts[where] += 1
            ops[where][op.group(1) + _width(op.group(1), op.group(2))] += 1
    return [(w, n, dict(ops[w].most_common(5))) for w, n in counts.most_common()]


def _width(opcode: str, suffixes: str) -> str:
    """The access width (".64", ".128") of a shared-memory load or store, "" when 32-bit or another opcode: the
    by-line counts then tell an element-wise operand transpose (scalar STS) from a vector store (STS.128)."""
    width = re.search(r"\.(64|128)\b", suffixes) if opcode in ("STS", "LDS") else None
    return "" if width is None else width.group(0)


def _sass_instructions(sass: str) -> list[tuple[int, str]]:
    """(address, text) of every SASS instruction in a cuobjdump listing."""
    return [(int(a, 16), t) for a, t in re.findall(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", sass, flags=re.M)]


def _loop_bodies(instructions: list[tuple[int, str]]) -> list[int]:
    """Instructions from the target of each backward branch to the branch, in address order: a loop body's size
    (per iteration; a loop holding another counts the inner one's once)."""
    index = {a: i for i, (a, _) in enumerate(instructions)}
    bodies = []
    for i, (address, text) in enumerate(instructions):
        target = re.search(r"\bBRA\b.*?0x([0-9a-f]+)", text)
        if target and int(target.group(1), 16) < address:
            bodies.append(i - index[int(target.group(1), 16)] + 1)
    return bodies


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("module")
    ap.add_argument("kernel")
    ap.add_argument("--warps", type=int, default=4)
    ap.add_argument("--maxnreg", type=int, default=None, help="register cap (a launch option)")
    ap.add_argument("--stages", type=int, default=None, help="num_stages (a launch option)")
    ap.add_argument("--const", nargs="*", default=[], help="NAME=python-literal constexprs")
    ap.add_argument("--bf16", nargs="*", default=None, help="bf16 pointer arguments (default: the Mamba-3 set)")
    ap.add_argument("--types", nargs="*", default=[], help="NAME=TYPE argument types, e.g. rows_ptr='*i64'")
    ap.add_argument("--aligned", nargs="*", default=[], help="i32 arguments a launch sees divisible by 16")
    ap.add_argument("--lines", type=int, default=0, help="also print the N source lines with the most SASS")
    args = ap.parse_args()
    fn = getattr(importlib.import_module(args.module), args.kernel)
    consts = {k: ast.literal_eval(v) for k, v in (c.split("=", 1) for c in args.const)}
    options = {k: v for k, v in (("maxnreg", args.maxnreg), ("num_stages", args.stages)) if v is not None}
    stats = build_stats(fn, consts, args.warps, bf16=MAMBA3_BF16 if args.bf16 is None else args.bf16,
                        types=dict(t.split("=", 1) for t in args.types), options=options,
                        aligned=tuple(args.aligned), by_line=args.lines > 0)
    by_line = stats.pop("by_line")
    print(args.kernel, args.warps, "warps", stats)
    for where, count, ops in by_line[:args.lines]:
        print(f"{count:6d}  {where:24s} {ops}")


if __name__ == "__main__":
    main()
