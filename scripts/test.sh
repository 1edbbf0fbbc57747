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
# The llama.cpp server builds (about 5 minutes the first time) and starts while cargo
# builds the tests, so neither waits for the other. The trap comes first: a start that fails or is interrupted after launching
# the server still stops it (stop only ever kills the PID that start recorded).
server_log="$(mktemp)"
trap 'kill "${server_start:-}" 2>/dev/null || true; bash scripts/llama-server.sh stop; rm -f "$server_log"' EXIT
bash scripts/llama-server.sh start >"$server_log" 2>&1 &
server_start=$!

cargo test --workspace --all-features --no-run "$@"

if ! wait "$server_start"; then
    cat "$server_log" >&2
    echo "the llama.cpp server did not start; see above" >&2
    exit 1
fi
cat "$server_log"
LLAMA_SERVER_URL="$(bash scripts/llama-server.sh url)"
export LLAMA_SERVER_URL

cargo test --workspace --all-features "$@"
