#!/usr/bin/env bash
# Build the sdist and wheel into DIR and check them (twine, check-wheel-contents): what
# scripts/test_wheel.sh and scripts/test_extras.sh install.   Usage: build_dist.sh DIR
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
.venv/bin/python -m build -q --outdir "$out" . >"$log" 2>&1 || { cat "$log"; exit 1; }
.venv/bin/python -m twine check --strict "$out"/*
# W009: one distribution ships three top-level packages by design (rmm_core and adapters)
.venv/bin/python -m check_wheel_contents --ignore W009 "$out"/*.whl
