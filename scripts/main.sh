#!/usr/bin/env bash
# Set up and run the main job: verify + bench of both tracks on the default workloads.
# Without CUDA it runs the small CPU default and says that real timings need a GPU.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup_env.sh"
mkdir -p out
"$SSMKIT_PY" -m ssmkit.cli granite verify "$@"
"$SSMKIT_PY" -m ssmkit.cli granite bench --json out/granite_bench.json
"$SSMKIT_PY" -m ssmkit.cli mamba3 selfcheck --json out/mamba3_selfcheck.json
