#!/usr/bin/env bash
# The test command: lint, then the whole suite (slow tests included).
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/ruff check .
.venv/bin/python -m pytest -q "$@"
