#!/usr/bin/env bash
# Set up and run the test suite (CPU; Triton kernels run under TRITON_INTERPRET=1 where tests ask for it).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup_env.sh"
"$SSMKIT_PY" -m pytest tests "$@"
