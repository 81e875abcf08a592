#!/usr/bin/env bash
# What a user installs: build the sdist and wheel, check them, install the wheel into a fresh
# venv (the source tree off sys.path) and run tests/installed there.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
.venv/bin/python -m build -q --outdir "$work/dist" . >"$work/build.log" 2>&1 \
    || { cat "$work/build.log"; exit 1; }
.venv/bin/twine check --strict "$work"/dist/*
# W009: one distribution ships three top-level packages by design (rmm_core and adapters)
.venv/bin/check-wheel-contents --ignore W009 "$work"/dist/*.whl
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check "$work"/dist/*.whl pytest pytest-asyncio
cd "$work"  # not the checkout: `import rmm_core` must find the installed wheel
RMM_INSTALLED_WHEEL=1 "$work/venv/bin/python" -m pytest -q -p no:cacheprovider \
    --rootdir "$root" -c "$root/pyproject.toml" "$root/tests/installed"
