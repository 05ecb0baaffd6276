#!/usr/bin/env bash
# Regenerate samples/logs/hang with a real 2-rank msrun job on CPU (about 30 s).
# Rank 1 stops before its all-reduce at step 3; rank 0 fails with the CPU collective timeout.
exec "$(dirname "$0")/../run_sample.sh" "$(dirname "$0")" train_hang.py
