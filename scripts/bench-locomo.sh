#!/usr/bin/env bash
# Runs the LoCoMo memory benchmark and writes the figures to docs/bench/:
#   - locomo.json: every strategy at windows 20 and 50, and `layered` at budgets
#     1000, 2000 and 4000 (window 20);
#   - locomo_ablation.json: the ablation ladder at budget 2000 (window 20);
#   - recall_vs_tokens.svg: recall against context tokens.
#   bash scripts/bench-locomo.sh [PATH_TO_LOCOMO_JSON]
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${1:-../shared/bench/locomo/locomo_dev.json}"
# The bench crate links the library without Bevy's renderer: minutes, not half an hour.
cargo build --release -p bevy_npc_memory_bench --bin memory_bench
BIN="${CARGO_TARGET_DIR:-target}/release/memory_bench"
bench() { "$BIN" --data "$DATA" --json "$@"; }

# Prints a JSON list of one memory_bench run per argument line read from stdin.
runs() {
    local first=1
    echo "["
    while read -r line; do
        [ -z "$line" ] && continue
        if [ $first -eq 0 ]; then echo ","; fi
        # shellcheck disable=SC2086
        bench $line
        first=0
    done
    echo "]"
}

runs > docs/bench/locomo.json <<'RUNS'
--strategy full --window 20
--strategy window --window 20
--strategy summary --window 20
--strategy full --window 50
--strategy window --window 50
--strategy summary --window 50
--strategy layered --window 20 --budget 1000
--strategy layered --window 20 --budget 2000
--strategy layered --window 20 --budget 4000
RUNS

runs > docs/bench/locomo_ablation.json <<'RUNS'
--strategy window --window 20 --budget 2000
--strategy summary --window 20 --budget 2000
--strategy layered --window 20 --budget 2000 --without neighbours,facts,segments
--strategy layered --window 20 --budget 2000 --without facts,segments
--strategy layered --window 20 --budget 2000 --without segments
--strategy layered --window 20 --budget 2000
RUNS

python3 scripts/plot_recall.py docs/bench/locomo.json docs/bench/recall_vs_tokens.svg
echo "wrote docs/bench/locomo.json, docs/bench/locomo_ablation.json and docs/bench/recall_vs_tokens.svg"
