#!/usr/bin/env bash
# The Python package (clients/python) as a user gets it: an sdist built from the checkout, a
# wheel built from that sdist, the wheel installed into a fresh virtualenv with the tests'
# requirements, then `ruff check` and its tests (which start their own servers). Needs
# .tools/venv (scripts/install-deps.sh) for `build`. Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
.tools/venv/bin/python -m build --outdir "$work/dist" clients/python >"$work/build.log" 2>&1 || {
  cat "$work/build.log" >&2
  exit 1
}
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check \
  "$work"/dist/redis_rl-*.whl -r clients/python/tests/requirements.txt
export RL_PACKAGE_SDIST=$(ls "$work"/dist/redis_rl-*.tar.gz)
export RL_PACKAGE_WHEEL=$(ls "$work"/dist/redis_rl-*.whl)
cd clients/python
"$work/venv/bin/ruff" check --no-cache .
"$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
