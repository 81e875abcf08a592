#!/usr/bin/env bash
# What a user installs: the sdist and wheel built and checked (scripts/build_dist.sh, or
# those already built in DIR), the wheel installed into a fresh venv (the source tree off
# sys.path) and tests/installed run there: the base install, and the cookbook scripts that
# need no extra.   Usage: test_wheel.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dist=${1:-$work/dist}
[ $# -gt 0 ] || bash scripts/build_dist.sh "$dist"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check "$dist"/*.whl pytest pytest-asyncio
cd "$work"  # not the checkout: `import rmm_core` must find the installed wheel
RMM_INSTALLED_WHEEL=1 "$work/venv/bin/python" -m pytest -q -p no:cacheprovider \
    --rootdir "$root" -c "$root/pyproject.toml" "$root/tests/installed"
