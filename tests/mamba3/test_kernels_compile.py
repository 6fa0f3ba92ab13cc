"""The Mamba-3 kernels compile for an H100/H200 (sm_90) at the operator's sizes.

The interpreter does not type-check like Triton's compiler (and cannot run ptxas), so a kernel that passes every
interpreter test can still fail to build on the GPU; this runs the real compiler (frontend, LLVM, ptxas) on the CPU,
in a subprocess without TRITON_INTERPRET (the ``compile_for_sm90`` fixture), for every forward and backward kernel
in the configurations the operator launches (tf32 and tf32x3 dots, split-bf16 transposed-operand dots, both
state-gradient forms).
"""

_SM90_COMPILE = r"""
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from ssmkit.kernels.mamba3 import bwd, fwd

BF16 = {"q_ptr", "k_ptr", "v_ptr", "z_ptr", "trap_ptr", "ang_ptr", "dout_ptr", "dv_ptr", "dz_ptr", "dtrap_ptr",
        "dang_ptr", "dq_ptr", "dk_ptr", "dfv_ptr", "out_ptr", "fv_ptr", "angles_ptr", "mg_ptr", "dy_ptr",
        "dqp_ptr", "dkp_ptr"}  # (dqp, dkp: the per-head dq / dk rows, bf16 by default: Mamba3BwdConfig.head_partials)
SIZES = dict(H=32, P=64, N=128, NA=32, C=64, CHUNK_=64, PDL=False, PDL_NEXT=False)  # (plain launches unless a build
# says: PDL launched by programmatic dependent launch, PDL_NEXT its successor)


WORDS = ("V_WORD", "Z_WORD", "OUT_WORD", "DOUT_WORD", "DZ_WORD", "DV_WORD", "ANGLES_WORD", "DANGLES_WORD",
         "FINAL_SSM_WORD", "DFINAL_SSM_WORD", "DQ_WORD", "DK_WORD", "DADT_WORD", "DDT_WORD", "DTRAP_WORD",
         "DQ_BIAS_WORD", "DK_BIAS_WORD", "DD_WORD", "K_WORD", "ADT_WORD", "DT_WORD", "TRAP_WORD", "K_BIAS_WORD",
         "CU_SEQLENS_WORD")


def build(fn, consts, num_warps=4, posted=False, bf16=(), fp32=(), **options):
    # posted: the kernel's *_WORD pointers read from the stash (a graph's launch), else -1 (the direct call's);
    # bf16: pointers that are bf16 in this launch besides BF16 (the output standing in for unsaved buffers); fp32:
    # pointers of BF16 that are fp32 in this launch
    words = {w: 7 if posted else -1 for w in WORDS}
    consts = {k: v for k, v in {**SIZES, **words, **consts}.items() if k in fn.arg_names}
    ptr = {"cu_ptr": "*i32", "io_ptr": "*i64"}
    sig = {n: "constexpr" if n in consts else ("*bf16" if n in (BF16 | set(bf16)) - set(fp32) else ptr.get(n, "*fp32"))
           if n.endswith("_ptr") else "i32" for n in fn.arg_names}
    src = ASTSource(fn, sig, constexprs={(fn.arg_names.index(k),): v for k, v in consts.items()})
    triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": num_warps, **options})


# warps as launched (Mamba3BwdConfig / Mamba3FwdConfig defaults, and the chunk body's 8-warp options), and the side
# kernels under a register cap (Mamba3BwdConfig.side_maxnreg); the transposed-operand dots at the input precision
# and split into bf16 (Mamba3BwdConfig.transposed_precision)
for prec, tprec in (("tf32", "tf32"), ("tf32x3", "tf32x3"), ("tf32", "bf16x3")):
    for warps in (4, 8):
        build(bwd._m3b_intra_kernel, dict(SB=4, PREC=prec, TPREC=tprec), warps)
        build(bwd._m3b_sides_kernel, dict(SB=4, PREC=tprec), warps)
    build(bwd._m3b_intra_kernel, dict(SB=4, PREC=prec, TPREC=tprec), 4, posted=True)
    build(bwd._m3b_sides_kernel, dict(SB=4, PREC=tprec), 4, posted=True)
    for maxnreg in (168, 128):  # (168: the default cap, Mamba3BwdConfig.side_maxnreg)
        build(bwd._m3b_sides_kernel, dict(SB=4, PREC=tprec), 4, maxnreg=maxnreg)
    for warps in (4, 8):
        build(bwd._m3b_dstate_kernel, dict(TPREC=tprec), warps, num_stages=1)  # (Mamba3BwdConfig.dstate_stages)
    build(bwd._m3b_dstate_kernel, dict(TPREC=tprec), 4, posted=True, num_stages=1)
    for warps in (4, 8):
        build(bwd._m3b_dstate_local_kernel, dict(SB=8, TPREC=tprec), warps)
build(bwd._m3b_intra_kernel, dict(SB=4, PREC="tf32x3", TPREC="bf16x3"), 4)  # (the precisions mixed)
# the intra kernel under a register cap (Mamba3BwdConfig.intra_maxnreg): three 4-warp or two 8-warp programs per SM
for warps, maxnreg in ((4, 168), (8, 128)):
    build(bwd._m3b_intra_kernel, dict(SB=4, PREC="tf32", TPREC="bf16x3"), warps, posted=True, maxnreg=maxnreg)
# the chunk body as a graph launches it on sm_90: the intra kernel by programmatic dependent launch after the
# forward's chunk scan (Mamba3BwdConfig.intra_pdl), the side kernel likewise after it (side_pdl); either alone
for pdl, pdl_next in ((True, True), (False, True), (True, False)):
    build(bwd._m3b_intra_kernel, dict(SB=4, PREC="tf32", TPREC="bf16x3", PDL=pdl, PDL_NEXT=pdl_next), 4, posted=True,
          maxnreg=168, launch_pdl=pdl)
build(bwd._m3b_sides_kernel, dict(SB=4, PREC="bf16x3", PDL=True), 4, posted=True, maxnreg=168, launch_pdl=True)
# the per-head dq / dk rows in fp32 (Mamba3BwdConfig.head_partials "fp32")
build(bwd._m3b_sides_kernel, dict(SB=4, PREC="bf16x3"), 4, posted=True, fp32=("dqp_ptr", "dkp_ptr"), maxnreg=168)
build(bwd._m3b_finish_kernel, dict(SB=8, BT=bwd.DEFAULT_BWD_CONFIG.reduce_tokens, BS=bwd._REDUCE_SLOTS, PDL=True),
      bwd.DEFAULT_BWD_CONFIG.finish_warps, posted=True, fp32=("dqp_ptr", "dkp_ptr"), launch_pdl=True)
for posted in (False, True):
    build(bwd._m3b_dstate_scan_kernel, dict(PN=8192, BLOCK=1024), posted=posted)
# the autograd form's (dz and dY); the full-VJP call's, direct and a graph's (dY alone: the chunk scan writes dz)
for dz, dy, posted in ((True, True, False), (False, True, False), (False, True, True)):
    build(bwd._m3b_gate_kernel, dict(BLOCK=bwd._GATE_BLOCK, DZ=dz, DY=dy), posted=posted)
# the finish kernel after the dPhi carry kernel by programmatic dependent launch (Mamba3BwdConfig.finish_pdl, the
# default on sm_90) or plainly
for posted in (False, True):
    for pdl in (False, True):
        build(bwd._m3b_finish_kernel,
              dict(SB=8, BT=bwd.DEFAULT_BWD_CONFIG.reduce_tokens, BS=bwd._REDUCE_SLOTS, PDL=pdl),
              bwd.DEFAULT_BWD_CONFIG.finish_warps, posted=posted, launch_pdl=pdl)
for pdl in (False, True):
    build(bwd._m3b_dphi_carry_kernel, dict(CB=bwd._ANGLE_SLOTS, PDL_NEXT=pdl), 1)
# the dots whose B operand wgmma would need transposed: split into bf16 (Mamba3FwdConfig.transposed_precision, the
# default) or at the input precision
for prec, tprec in (("tf32", "bf16x3"), ("tf32", "tf32"), ("tf32x3", "tf32x3")):
    for posted in (False, True):
        # as launched (Mamba3FwdConfig.chunk_warps 4, chunk_maxnreg 128), uncapped, and as until session 22 (8
        # warps, 128)
        build(fwd._mamba3_fwd_chunk_state_kernel, dict(BLOCK_S=8, TPREC=tprec), 4, posted=posted, maxnreg=128)
        build(fwd._mamba3_fwd_chunk_state_kernel, dict(BLOCK_S=8, TPREC=tprec), 4, posted=posted)
        build(fwd._mamba3_fwd_chunk_state_kernel, dict(BLOCK_S=8, TPREC=tprec), 8, posted=posted, maxnreg=128)
    for save in (False, True):
        for warps in (4, 8):
            build(fwd._mamba3_fwd_chunk_scan_kernel,
                  dict(BLOCK_S=8, SAVE=save, GATE_GRAD=False, PRECISION=prec, TPREC=tprec), warps)
    # under the register cap as launched (Mamba3FwdConfig.scan_maxnreg, scan_warps): the full-VJP call's, writing dz
    # (direct and a graph's, posted; y_ptr the bf16 output, never written), mamba3_siso's saving y for its backward,
    # and mamba3_siso's without a gradient (nothing saved: y_ptr is the bf16 output)
    # (PDL_NEXT: on sm_90 the scan lets a successor launched by programmatic dependent launch start)
    for save, gate_grad, posted in ((True, True, False), (True, True, True), (True, False, False),
                                    (False, False, False)):
        build(fwd._mamba3_fwd_chunk_scan_kernel,
              dict(BLOCK_S=8, SAVE=save, GATE_GRAD=gate_grad, PRECISION=prec, TPREC=tprec, PDL_NEXT=True), 4,
              posted=posted, maxnreg=168, bf16=("y_ptr",) if gate_grad or not save else ())
for save in (False, True):
    for warps in (4, 8):
        build(fwd._mamba3_fwd_rotate_kernel, dict(BLOCK_S=8, SAVE=save), warps)
# under the register cap as launched (Mamba3FwdConfig.rotate_maxnreg, rotate_warps; the kernel reads no posted
# pointer): saving (the full-VJP call) and not (mamba3_siso's without a gradient, cos_ptr / sin_ptr the bf16 output)
for save in (True, False):
    build(fwd._mamba3_fwd_rotate_kernel, dict(BLOCK_S=8, SAVE=save), 8, maxnreg=128,
          bf16=() if save else ("cos_ptr", "sin_ptr"))
build(fwd._mamba3_fwd_angle_carry_kernel, {}, 1)
for posted, store_carry in ((False, True), (False, False), (True, False)):  # (one stream: it stores the carry)
    build(fwd._mamba3_fwd_state_passing_kernel, dict(BLOCK_P=16, STORE_CARRY=store_carry), posted=posted)
"""


def test_mamba3_kernels_compile_for_sm90(compile_for_sm90):
    compile_for_sm90(_SM90_COMPILE)
