#!/usr/bin/env bash
# scripts/deps.sh - install the Debian packages lenx needs, when missing.
# Called by the Makefile before anything is built, so a fresh Debian 12
# machine needs no manual step. Prints nothing when all is there.
# `scripts/deps.sh fuzz` (make fuzz) adds clang with its libFuzzer and
# sanitizer runtimes and LLVM's OpenMP runtime (clang's -fopenmp needs libomp).
# `scripts/deps.sh browser` (make test-report) adds headless Chromium, a font
# and python3-pil, which check `lenx report` in a real browser.
set -euo pipefail

pkgs=(gcc make pkg-config libopenblas-openmp-dev libyaml-dev libsqlite3-dev sqlite3 libjansson-dev libpcre2-dev libutf8proc-dev zlib1g-dev libssl-dev libdnnl-dev libmicrohttpd-dev libcurl4-openssl-dev libcriterion-dev gnuplot-nox)
if [ "${1:-}" = fuzz ]; then
    pkgs+=(clang libclang-rt-14-dev libomp-14-dev)
elif [ "${1:-}" = browser ]; then
    pkgs+=(chromium fonts-dejavu-core python3-pil)
fi

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "lenx: not a Debian system; make sure these are installed: ${pkgs[*]}" >&2
    exit 0
fi

missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        sudo="sudo"
    else
        echo "lenx: missing packages: ${missing[*]}" >&2
        echo "  hint: as root, run: apt-get install ${missing[*]}" >&2
        exit 1
    fi
fi

echo "lenx: installing missing packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# wait for another apt (a parallel make, unattended upgrades) instead of failing
apt=(apt-get -o DPkg::Lock::Timeout=600)
if ! $sudo "${apt[@]}" install -y -q --no-install-recommends "${missing[@]}" >&2; then
    $sudo "${apt[@]}" update -q >&2
    $sudo "${apt[@]}" install -y -q --no-install-recommends "${missing[@]}" >&2
fi
