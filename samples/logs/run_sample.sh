#!/usr/bin/env bash
# Run one sample's script as a real 2-rank msrun job on CPU and keep its logs in <case dir>/logs.
# Usage: run_sample.sh CASE_DIR SCRIPT.py   (called by each case's make_sample.sh)
# The CPU collective wait (30 s by default) follows the lower of MS_CPU_COMM_OP_TIMEOUT and MS_NODE_TIMEOUT;
# the latter is also the scheduler's heartbeat timeout (30 s). Both shortened so samples regenerate quickly.
set -u
here="$(cd "$1" && pwd)"
script="$here/$2"
root="$(cd "$here/../../.." && pwd)"
export PATH="$root/.venv/bin:$PATH"
port="$(python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
rm -rf "$here/logs" && mkdir -p "$here/logs"
cd "$here/logs"
MS_CPU_COMM_OP_TIMEOUT=5 MS_NODE_TIMEOUT=10 nice -n 10 timeout 300 \
  msrun --worker_num=2 --local_worker_num=2 --master_port="$port" --log_dir="$here/logs" --join=True \
  "$script" > "$here/logs/msrun.log" 2>&1
echo "msrun exit code: $? (1 expected: the job fails)"
