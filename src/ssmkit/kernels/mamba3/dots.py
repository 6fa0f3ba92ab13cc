# fp32 products on the tensor cores for the Mamba-3 kernels (forward and backward): an fp32 operand split into two
# bf16 halves (`_m3_split_bf16`) and its dot as bf16 dots of the halves (`_m3_dot`, "bf16x3"), or one tl.dot at a
# tf32 / 3xtf32 / ieee input precision. wgmma reads tf32 operands from shared memory K-major only, so an N-contiguous
# fp32 B tile is staged there with element-wise, bank-conflicted stores; 16-bit operands may lie in either
# orientation (bench/mamba3/NOTES.md "Session 18", "Session 19").
import triton
import triton.language as tl


@triton.jit
def _m3_split_bf16(x):
    """fp32 x as bf16 (hi, lo), x ~ hi + lo, by integer adds, shifts and masks instead of F2F conversions (a quarter
    of the FP32 rate; offline 480 of them in the side kernel, none this way; bench/mamba3/NOTES.md "Session 19"):
    hi = x rounded to bf16 (nearest, ties away from zero), so |x - hi| <= 2^-8 |x|; lo = x - hi (exact in fp32)
    truncated to bf16, so |x - hi - lo| < 2^-16 |x|. Outside the operands' range: |x| >= ~3.396e38 (where hi rounds
    to inf) and inf give NaN in hi + lo; subnormal x lose their lo (absolute error < 2^-133)."""
    bits = x.to(tl.uint32, bitcast=True) + 0x8000
    rest = x - (bits & 0xFFFF0000).to(tl.float32, bitcast=True)
    return ((bits >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True),
            (rest.to(tl.uint32, bitcast=True) >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True))


@triton.jit
def _m3_join_bf16(hi, lo):
    """hi + lo in fp32 for a tile given as bf16 halves (`_m3_split_bf16`); lo None: hi (exact in bf16) alone; an
    fp32 hi (lo None) is returned as it is."""
    x = hi.to(tl.float32)
    if lo is not None:
        x += lo.to(tl.float32)
    return x


@triton.jit
def _m3_dot(a, b, PREC: tl.constexpr, acc=None, a_lo=None, b_lo=None):
    """a @ b (+ acc) in fp32, a (M, K), b (K, N), acc (M, N) fp32 or None. Each operand is an fp32 tile, or a bf16
    tile: the hi half of a split its producer made (`_m3_split_bf16`), with the lo half in a_lo / b_lo, or with
    a_lo / b_lo None for a tile exact in bf16 (a bf16 input such as v).
    PREC "bf16x3": fp32 operands split here into bf16 halves x ~ hi + lo, then the bf16 dots lo.hi + hi.lo + hi.hi
    accumulated in fp32 onto acc (the lo.lo term dropped: relative error ~2^-16 per product against tf32's 2^-11;
    a term whose lo is absent, an operand exact in bf16, left out: the same bits as a zero lo). Why: wgmma reads
    tf32 operands from shared memory K-major only, so Triton stages an N-contiguous fp32 B tile with element-wise
    (bank-conflicted) stores; 16-bit operands may lie in either orientation (bench/mamba3/NOTES.md "Session 19").
    PREC "tf32", "tf32x3", "ieee": the operands as fp32 (halves added back, `_m3_join_bf16`), one tl.dot at that
    input precision, acc added after it."""
    if PREC == "bf16x3":
        if a.dtype == tl.float32:
            a, a_lo = _m3_split_bf16(a)
        if b.dtype == tl.float32:
            b, b_lo = _m3_split_bf16(b)
        d = acc
        if a_lo is not None:
            d = tl.dot(a_lo, b, d)
        if b_lo is not None:
            d = tl.dot(a, b_lo, d)
        d = tl.dot(a, b, d)
    else:
        d = tl.dot(_m3_join_bf16(a, a_lo), _m3_join_bf16(b, b_lo), input_precision=PREC)
        if acc is not None:
            d += acc
    return d
