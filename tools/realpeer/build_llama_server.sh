#!/usr/bin/env bash
# Builds llama.cpp's llama-server from the tree vendored in the llama-cpp-python sdist, and
# makes tiny random-weight GGUF models that embed real chat templates from that tree.
# The result is the cache the `realpeer` test lane runs against (tests/realpeer/).
#
#   tools/realpeer/build_llama_server.sh            # build (or reuse) the cache
#   CAPPLAN_REALPEER_CACHE=/some/dir tools/realpeer/build_llama_server.sh
#
# Every step is skipped when its output already exists, so rerunning is cheap.
# Needs: python3 (with venv + pip), a C/C++ compiler; cmake is pip-installed when missing.
set -euo pipefail

VERSION="0.3.36"
HERE="$(cd "$(dirname "$0")" && pwd)"
CACHE="${CAPPLAN_REALPEER_CACHE:-$HOME/.cache/capplan/realpeer}"
JOBS="${CAPPLAN_REALPEER_JOBS:-2}"
SRC="$CACHE/src"
TREE="$SRC/llama_cpp_python-$VERSION/vendor/llama.cpp"
BUILD="$CACHE/build"
TOOLVENV="$CACHE/venv"
BIN="$CACHE/bin"

log() { printf '[realpeer %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }

mkdir -p "$CACHE" "$SRC" "$BIN"

# A private venv: cmake (when the system has none) and gguf-py's dependencies, kept out of
# the project's own environment.
if [ ! -x "$TOOLVENV/bin/python" ]; then
  log "creating tool venv $TOOLVENV"
  python3 -m venv "$TOOLVENV"
  "$TOOLVENV/bin/python" -m pip install -q --upgrade pip
fi
if ! "$TOOLVENV/bin/python" -c "import numpy, yaml, tqdm, requests" 2>/dev/null; then
  "$TOOLVENV/bin/python" -m pip install -q numpy pyyaml tqdm requests
fi
CMAKE="$(command -v cmake || true)"
if [ -z "$CMAKE" ]; then
  [ -x "$TOOLVENV/bin/cmake" ] || "$TOOLVENV/bin/python" -m pip install -q cmake
  CMAKE="$TOOLVENV/bin/cmake"
fi

# 1. the sdist (source only: the vendored llama.cpp tree is what we build)
if [ ! -d "$TREE" ]; then
  log "downloading llama-cpp-python==$VERSION sdist"
  "$TOOLVENV/bin/python" -m pip download -q --no-deps --no-binary :all: \
    -d "$SRC" "llama-cpp-python==$VERSION"
  tar -xzf "$SRC/llama_cpp_python-$VERSION.tar.gz" -C "$SRC"
fi
[ -d "$TREE/models/templates" ] || { echo "error: $TREE has no models/templates" >&2; exit 1; }

# 2. llama-server (Release, no curl, no prebuilt web UI; low priority: the cores are shared)
if [ ! -x "$BIN/llama-server" ]; then
  log "configuring llama.cpp in $BUILD"
  nice -n 19 "$CMAKE" -S "$TREE" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_CURL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF >"$CACHE/configure.log" 2>&1 \
    || { tail -40 "$CACHE/configure.log" >&2; exit 1; }
  log "building llama-server with -j$JOBS (20-40 min on 2 cores)"
  nice -n 19 "$CMAKE" --build "$BUILD" --config Release --target llama-server -j "$JOBS" \
    >"$CACHE/build.log" 2>&1 || { tail -40 "$CACHE/build.log" >&2; exit 1; }
  cp "$BUILD/bin/llama-server" "$BIN/llama-server.tmp" && mv "$BIN/llama-server.tmp" "$BIN/llama-server"
fi

# 3. the models: one tiny GGUF per chat template (again whenever make_models.py changed)
if [ ! -f "$CACHE/models/models.json" ] || [ "$HERE/make_models.py" -nt "$CACHE/models/models.json" ]; then
  log "making template models"
  PYTHONPATH="$TREE/gguf-py" "$TOOLVENV/bin/python" "$HERE/make_models.py" \
    --templates "$TREE/models/templates" --out "$CACHE/models"
fi

"$BIN/llama-server" --version >"$CACHE/version.txt" 2>&1 || true
log "done: $BIN/llama-server, models in $CACHE/models"
