#!/usr/bin/env bash
# Regenerate samples/logs/shape with a real 2-rank msrun job on CPU (about 20 s).
# Both ranks build a sharded attention score whose q/k head split disagree: MindSpore raises its MatMul shape error.
exec "$(dirname "$0")/../run_sample.sh" "$(dirname "$0")" train_shape.py
