#!/usr/bin/env bash
# Runs a command with this project's own NVIDIA MPS control daemon (own pipe and log folders), then
# stops the daemon. Usage: native/with_mps.sh COMMAND...   Prints what the daemon logged on failure.
set -u
export CUDA_MPS_PIPE_DIRECTORY="${CUDA_MPS_PIPE_DIRECTORY:-/tmp/inss-mps/pipe}"
export CUDA_MPS_LOG_DIRECTORY="${CUDA_MPS_LOG_DIRECTORY:-/tmp/inss-mps/log}"
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
if ! nvidia-cuda-mps-control -d; then
  echo "with_mps: nvidia-cuda-mps-control -d failed" >&2
  cat "$CUDA_MPS_LOG_DIRECTORY"/*.log >&2 2>/dev/null
  exit 3
fi
"$@"
rc=$?
echo quit | nvidia-cuda-mps-control
sleep 1
if [ "$rc" -ne 0 ]; then tail -20 "$CUDA_MPS_LOG_DIRECTORY"/*.log >&2 2>/dev/null; fi
exit "$rc"
