#!/usr/bin/env bash
# Re-run every seed check on this machine's MindSpore and store the real output beside each script.
# Usage: docs/seed-checks/run_checks.sh [path/to/python]   (default: .venv/bin/python of the repo)
set -u
here=$(cd "$(dirname "$0")" && pwd)
py=${1:-$here/../../.venv/bin/python}
msrun=$(dirname "$py")/msrun
export PATH="$(dirname "$py"):$PATH"  # msrun starts workers with the `python` on PATH
cd "$here"
for s in matmul_shape matmul_out clip_by_norm graph_kernel layernorm_gamma_shard get_rank_without_init api_names; do
  nice -n 10 "$py" "$s.py" > "$s.out" 2>&1
done
port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
for order in context_first init_first; do
  d=$(mktemp -d)
  ORDER=$order nice -n 10 "$msrun" --worker_num=1 --local_worker_num=1 --master_port="$(port)" \
    --log_dir="$d" --join=True init_order.py > /dev/null 2>&1
  grep -h "ORDER=\|set_context after init\|Error" "$d"/worker_0.log | grep -v "^\s*$" > "init_order.$order.out"
  rm -rf "$d"
done
for mode in before after none; do
  d=$(mktemp -d)
  SEED=$mode nice -n 10 "$msrun" --worker_num=2 --local_worker_num=2 --master_port="$(port)" \
    --log_dir="$d" --join=True seed_order.py > /dev/null 2>&1
  grep -h "SEED=" "$d"/worker_*.log | sort > "seed_order.$mode.out"
  rm -rf "$d"
done
