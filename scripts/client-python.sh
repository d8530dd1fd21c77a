#!/usr/bin/env bash
# Prints the path of a Python that runs the walkthrough's client
# (src/examples/mnist/mnist_client.py: tritonclient and pillow), making it
# first when there is none; scripts/demo.sh calls it. Exits 1, having said
# on standard error what is missing and how to get it, when it cannot.
#
# - POPEF_CLIENT_PYTHON, when set, is used as it is (it must have both).
# - Else the virtual environment .venv of the checkout (git-ignored; the one
#   .ci/run extends with the test peers), or POPEF_DEMO_VENV: reused when it
#   has them, else made with python3 (POPEF_DEMO_PYTHON) and given the
#   pinned src/examples/mnist/requirements.txt from PyPI, once.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
note() { printf 'demo: %s\n' "$*" >&2; }
has_client() { "$1" -c 'import tritonclient.grpc, PIL' >/dev/null 2>&1; }

requirements="$root/src/examples/mnist/requirements.txt"
pins="$(grep -v '^#' "$requirements" | xargs)"

if [ -n "${POPEF_CLIENT_PYTHON:-}" ]; then
  if has_client "$POPEF_CLIENT_PYTHON"; then
    echo "$POPEF_CLIENT_PYTHON"
    exit 0
  fi
  note "skipped the client: POPEF_CLIENT_PYTHON=$POPEF_CLIENT_PYTHON cannot import tritonclient.grpc and PIL; install them there ($POPEF_CLIENT_PYTHON -m pip install $pins) or unset it"
  exit 1
fi

venv="${POPEF_DEMO_VENV:-$root/.venv}"
if has_client "$venv/bin/python"; then
  echo "$venv/bin/python"
  exit 0
fi

base="${POPEF_DEMO_PYTHON:-python3}"
if ! command -v "$base" >/dev/null 2>&1; then
  note "skipped the client: it needs Python 3.10 or newer, and no $base was found; install it (Debian: apt-get install python3 python3-venv), then run npm run demo again"
  exit 1
fi

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
made=false
if [ ! -x "$venv/bin/python" ]; then
  if ! "$base" -m venv "$venv" >"$log" 2>&1; then
    rm -rf "$venv"
    note "skipped the client: $base -m venv $venv failed:"
    sed 's/^/  /' "$log" >&2
    note "install Python's venv module (Debian: apt-get install python3-venv), then run npm run demo again"
    exit 1
  fi
  made=true
fi
note "installing the client's Python packages into $venv, once: $pins (from PyPI, about 180 MB)"
if ! "$venv/bin/python" -m pip install --disable-pip-version-check --quiet -r "$requirements" >"$log" 2>&1; then
  # An environment this run made holds nothing else: it goes. One that was there stays as it was found, plus what pip finished.
  [ "$made" = false ] || rm -rf "$venv"
  note "skipped the client: pip could not install $pins; its last lines:"
  tail -n 3 "$log" | sed 's/^/  /' >&2
  note "with access to PyPI (or a mirror in PIP_INDEX_URL), run npm run demo again; or set POPEF_CLIENT_PYTHON to a Python that has them"
  exit 1
fi
echo "$venv/bin/python"
