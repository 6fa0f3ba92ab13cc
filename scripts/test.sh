#!/usr/bin/env bash
# Set up and run the test suite (CPU; Triton kernels run under TRITON_INTERPRET=1 where tests ask for it).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup_env.sh"
# setup_env.sh has changed directory to the repo root: with no path given, pyproject.toml's testpaths (tests/) is collected;
# paths given are relative to the repo root and run alone.
"$SSMKIT_PY" -m pytest "$@"
