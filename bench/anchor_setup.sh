#!/usr/bin/env bash
# Put the official Mamba-3 SISO Triton kernels (issue 6's anchor) where bench/mamba3_official_ab.py finds them:
# .anchors/ (git-ignored; never committed, never copied into ssmkit). Their code is read from a git clone or mirror of
# github.com/state-spaces/mamba at the spec's [REPO] snapshot (../shared/spec/mamba3_siso.md §0) or the revision
# given; only mamba_ssm/ops/triton/mamba3 is taken, under empty package __init__ files (the real mamba_ssm/__init__
# imports the package's compiled CUDA extensions, which the Triton path does not use). einops, which those files
# import, is unpacked beside them from its wheel (downloaded here, or taken from EINOPS_WHEEL).
# Usage: bash bench/anchor_setup.sh GIT_DIR [REVISION]     then carry .anchors to the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
src="${1:?usage: bash bench/anchor_setup.sh GIT_DIR [REVISION]}"
rev="${2:-e9594ce1c732d97440f0332fdc43170a2294dbfa}"
dest=.anchors/mamba3_official
rm -rf "$dest" && mkdir -p "$dest"
git --git-dir="$src" archive "$rev" mamba_ssm/ops/triton/mamba3 | tar -x -C "$dest"
for pkg in mamba_ssm mamba_ssm/ops mamba_ssm/ops/triton; do : > "$dest/$pkg/__init__.py"; done
echo "$rev" > "$dest/REVISION"
wheel="${EINOPS_WHEEL:-}"
if [ -z "$wheel" ]; then
  tmp=$(mktemp -d)
  python -m pip download --quiet --no-deps --only-binary :all: -d "$tmp" einops
  wheel=$(ls "$tmp"/einops-*.whl)
fi
python -m zipfile -e "$wheel" "$dest"
echo "official kernels at $rev and $(basename "$wheel") in $dest"
