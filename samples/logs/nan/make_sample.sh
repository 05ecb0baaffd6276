#!/usr/bin/env bash
# Regenerate samples/logs/nan with a real 2-rank msrun job on CPU (about 20 s).
# The learning rate is far too high: the loss overflows to Inf/NaN and LossMonitor stops the run.
exec "$(dirname "$0")/../run_sample.sh" "$(dirname "$0")" train_nan.py
