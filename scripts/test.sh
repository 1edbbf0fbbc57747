#!/usr/bin/env bash
# The test command: sets the machine up, builds every test, starts a real llama.cpp
# server for the real-peer tests, runs every test with every feature (the debug
# panel and the bunker screenshot test need `debug-ui`, the in-process model tests
# `local-llm`), and stops the server again.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
# The in-process backend's tests load the demo model; the llama.cpp server uses the
# same file.
NPC_MEMORY_TEST_MODEL="$(bash scripts/fetch-model.sh --path)"
bash scripts/fetch-model.sh >/dev/null
export NPC_MEMORY_TEST_MODEL

# The tests build first: on the way, llama-cpp-sys-2 compiles llama.cpp's libraries
# for the in-process backend, and the server then links them instead of compiling
# them a second time (scripts/llama-server.sh says when it may). Cargo's messages
# name that crate's build folder.
messages="$(mktemp)"
trap 'rm -f "$messages"' EXIT
cargo test --workspace --all-features --no-run --message-format=json-render-diagnostics "$@" >"$messages"
LLAMA_SERVER_PREBUILT="$(python3 scripts/cargo-out-dir.py llama-cpp-sys-2 <"$messages")"
export LLAMA_SERVER_PREBUILT

# The trap comes first: a start that fails or is interrupted after launching the
# server still stops it (stop only ever kills the PID that start recorded).
trap 'rm -f "$messages"; bash scripts/llama-server.sh stop' EXIT
bash scripts/llama-server.sh start
LLAMA_SERVER_URL="$(bash scripts/llama-server.sh url)"
export LLAMA_SERVER_URL

cargo test --workspace --all-features "$@"
