#!/usr/bin/env bash
# The test command: lint, commit subjects, the whole suite (slow tests included), then the
# built wheel installed into fresh venvs: alone (scripts/test_wheel.sh) and with each extra
# as pip resolves it for a user (scripts/test_extras.sh). The suite runs on two workers
# (pytest-xdist), each test module whole on one, so a module's fixtures load once.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/ruff check .
.venv/bin/python scripts/check_commits.py
.venv/bin/python -m pytest -q -n 2 --dist loadscope "$@"
dist=$(mktemp -d)
trap 'rm -rf "$dist"' EXIT
bash scripts/build_dist.sh "$dist"
bash scripts/test_wheel.sh "$dist"
bash scripts/test_extras.sh "$dist"
