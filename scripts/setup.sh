#!/usr/bin/env bash
# Installs what building and testing bevy_npc_memory needs. The README and CI both
# use this script, so a fresh machine and CI are set up the same way.
set -euo pipefail

# System packages the build and tests need.
# - The library enables no Bevy audio, gamepad or window features, so it needs no
#   ALSA, udev or X libraries itself.
# - The examples open a real X11 window (no gamepads, no Wayland, so no udev or
#   Wayland libraries): xkbcommon for input, and for the screenshot test a virtual
#   X server (xvfb) with Mesa's software Vulkan (lavapipe).
# - cmake and a C++ compiler build llama.cpp for the in-process backend (feature
#   `local-llm`), whose bindings bindgen generates with libclang, and the server
#   for the real-peer tests, which links those libraries.
APT_PACKAGES=(pkg-config cmake g++ libclang-dev libxkbcommon-dev libxkbcommon-x11-0
    xvfb xauth mesa-vulkan-drivers)

missing=()
for package in "${APT_PACKAGES[@]}"; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if ((${#missing[@]})); then
    if [ "$(id -u)" -eq 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
    else
        echo "please install: ${missing[*]} (e.g. sudo apt-get install ${missing[*]})" >&2
        exit 1
    fi
fi

command -v cargo >/dev/null || { echo "cargo is missing: install Rust 1.95+ with rustup" >&2; exit 1; }
cargo fetch --locked
