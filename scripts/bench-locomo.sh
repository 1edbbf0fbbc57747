#!/usr/bin/env bash
# Runs the LoCoMo memory benchmark for every strategy at windows 20 and 50, writes
# the figures to docs/bench/locomo.json and plots recall against context tokens.
#   bash scripts/bench-locomo.sh [PATH_TO_LOCOMO_JSON]
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${1:-../shared/bench/locomo/locomo_dev.json}"
cargo build --release --example memory_bench
out=docs/bench/locomo.json
echo "[" > "$out"
first=1
for window in 20 50; do
    for strategy in full window summary; do
        line=$(./target/release/examples/memory_bench --data "$DATA" --strategy "$strategy" --window "$window" --json)
        if [ $first -eq 0 ]; then echo "," >> "$out"; fi
        echo "$line" >> "$out"
        first=0
    done
done
echo "]" >> "$out"
python3 scripts/plot_recall.py "$out" docs/bench/recall_vs_tokens.svg
echo "wrote $out and docs/bench/recall_vs_tokens.svg"
