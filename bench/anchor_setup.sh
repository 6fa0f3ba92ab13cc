#!/usr/bin/env bash
# Put an issue's anchor kernels where the bench scripts find them: .anchors/ (git-ignored; never committed, never
# copied into ssmkit). Both fit the device's `carry` (64 MiB): carry [".anchors"].
#   bash bench/anchor_setup.sh mamba3 GIT_DIR [REVISION]
#     Issue 6: the official Mamba-3 SISO Triton kernels (mamba_ssm/ops/triton/mamba3) from a git clone or mirror of
#     github.com/state-spaces/mamba at the spec's [REPO] snapshot (../shared/spec/mamba3_siso.md §0) or REVISION,
#     into .anchors/mamba3_official, under empty package __init__ files (the real mamba_ssm/__init__ imports the
#     package's compiled CUDA extensions, which the Triton path does not use), with the einops wheel they import
#     unpacked beside them (downloaded, or EINOPS_WHEEL). For bench/mamba3_official_ab.py.
#   bash bench/anchor_setup.sh vllm [WHEEL]
#     Issue 5: vLLM 0.33.0's Mamba-2 kernels (vllm/model_executor/layers/mamba/ops: its .py files and tuned launch
#     configs, not the CPU fallbacks) from its wheel (downloaded, or WHEEL), into .anchors/vllm_ops under empty
#     package __init__ files; bench/vllm_kernels.py supplies the few other vllm modules they import. For
#     bench/granite_vllm_candidate.py (checked on the CPU by bench/granite_vllm_smoke.py).
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:?usage: bash bench/anchor_setup.sh mamba3 GIT_DIR [REVISION] | vllm [WHEEL]}"
download() {  # download PACKAGE==VERSION's wheel into a temporary folder, print its path
  local tmp; tmp=$(mktemp -d)
  python -m pip download --quiet --no-deps --only-binary :all: -d "$tmp" "$1" >&2
  ls "$tmp"/*.whl
}
case "$what" in
  mamba3)
    src="${2:?usage: bash bench/anchor_setup.sh mamba3 GIT_DIR [REVISION]}"
    rev="${3:-e9594ce1c732d97440f0332fdc43170a2294dbfa}"
    dest=.anchors/mamba3_official
    rm -rf "$dest" && mkdir -p "$dest"
    git --git-dir="$src" archive "$rev" mamba_ssm/ops/triton/mamba3 | tar -x -C "$dest"
    for pkg in mamba_ssm mamba_ssm/ops mamba_ssm/ops/triton; do : > "$dest/$pkg/__init__.py"; done
    echo "$rev" > "$dest/REVISION"
    wheel="${EINOPS_WHEEL:-$(download einops)}"
    python -m zipfile -e "$wheel" "$dest"
    echo "official kernels at $rev and $(basename "$wheel") in $dest";;
  vllm)
    wheel="${2:-$(download vllm==0.33.0)}"
    dest=.anchors/vllm_ops
    ops=vllm/model_executor/layers/mamba/ops
    rm -rf "$dest" && mkdir -p "$dest"
    python - "$wheel" "$dest" "$ops" <<'PY'
import sys
import zipfile

wheel, dest, ops = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith(ops + "/") and "/cpu/" not in n
             and (n.endswith(".py") or n.endswith(".json"))]  # (the .json: tuned launch configs per GPU)
    for name in names:
        z.extract(name, dest)
print(f"{len(names)} files of {ops}")
PY
    for pkg in vllm/model_executor vllm/model_executor/layers vllm/model_executor/layers/mamba; do
      : > "$dest/$pkg/__init__.py"
    done
    : > "$dest/$ops/__init__.py"
    basename "$wheel" > "$dest/REVISION"
    echo "vLLM kernels from $(basename "$wheel") in $dest";;
  *) echo "unknown anchor '$what' (mamba3 or vllm)" >&2; exit 2;;
esac
