#!/usr/bin/env bash
# The test command: sets the machine up, starts a real llama.cpp server for the
# real-peer tests, runs every test with every feature (the debug panel and the
# bunker screenshot test need `debug-ui`, the in-process model tests `local-llm`),
# and stops the server again.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
# The in-process backend's tests load the demo model; the llama.cpp server uses the
# same file.
NPC_MEMORY_TEST_MODEL="$(bash scripts/fetch-model.sh --path)"
bash scripts/fetch-model.sh >/dev/null
export NPC_MEMORY_TEST_MODEL
# The trap comes first: a start that fails or is interrupted after launching the
# server still stops it (stop only ever kills the PID that start recorded).
trap 'bash scripts/llama-server.sh stop' EXIT
bash scripts/llama-server.sh start
LLAMA_SERVER_URL="$(bash scripts/llama-server.sh url)"
export LLAMA_SERVER_URL

cargo test --workspace --all-features "$@"
