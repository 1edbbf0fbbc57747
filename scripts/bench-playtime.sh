#!/usr/bin/env bash
# Simulates a play session and writes what NPC memory costs per hour to docs/bench/:
#   - playtime.json: every strategy's tokens per hour (playtime_bench --json);
#   - tokens_per_hour.svg: prompt tokens per hour against hours played.
#   bash scripts/bench-playtime.sh [--npcs N] [--hours H] [--lines-per-hour R] [--data PATH]
# Defaults: 50 NPCs, 5 hours, 120 player lines an hour, LoCoMo from ../shared.
set -euo pipefail
cd "$(dirname "$0")/.."
# The bench crate links the library without Bevy's renderer: minutes, not half an hour.
cargo build --release -p bevy_npc_memory_bench --bin playtime_bench
BIN="${CARGO_TARGET_DIR:-target}/release/playtime_bench"
"$BIN" --npcs 50 --hours 5 "$@" --json > docs/bench/playtime.json
python3 scripts/plot_playtime.py docs/bench/playtime.json docs/bench/tokens_per_hour.svg
"$BIN" --npcs 50 --hours 5 "$@"
echo "wrote docs/bench/playtime.json and docs/bench/tokens_per_hour.svg"
