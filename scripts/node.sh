#!/usr/bin/env bash
# scripts/node.sh - Node.js and the official OpenAI SDK for Node (npm `openai`)
# into build/node/, idempotently: the third-party client tests/test_serve.c
# drives `lenx serve` with (tests/node/openai_sdk.cjs). Node comes from
# Debian (nodejs, npm) when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
sdk=openai@4.95.0
dir=build/node
[ -f "$dir/.done" ] && command -v node >/dev/null 2>&1 && exit 0
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && sudo="sudo"
    $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends nodejs npm >&2 ||
        { $sudo apt-get -o DPkg::Lock::Timeout=600 update -q >&2 &&
          $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends nodejs npm >&2; }
fi
mkdir -p "$dir"
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$sdk" >&2
touch "$dir/.done"
