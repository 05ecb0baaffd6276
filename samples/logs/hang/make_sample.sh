#!/usr/bin/env bash
# Regenerate samples/logs/hang with a real 2-rank msrun job on CPU (about 30 s).
# Rank 1 stops before its all-reduce at step 3; rank 0 fails with the CPU collective timeout.
# The collective wait (30 s by default) follows the lower of MS_CPU_COMM_OP_TIMEOUT and MS_NODE_TIMEOUT; the
# latter is also the scheduler's heartbeat timeout (30 s). Both shortened so the sample regenerates quickly.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
export PATH="$root/.venv/bin:$PATH"
port="$(python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
rm -rf "$here/logs" && mkdir -p "$here/logs"
cd "$here/logs"
MS_CPU_COMM_OP_TIMEOUT=5 MS_NODE_TIMEOUT=10 nice -n 10 timeout 300 \
  msrun --worker_num=2 --local_worker_num=2 --master_port="$port" --log_dir="$here/logs" --join=True \
  "$here/train_hang.py" > "$here/logs/msrun.log" 2>&1
echo "msrun exit code: $? (1 expected: the job fails)"
