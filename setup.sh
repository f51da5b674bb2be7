#!/usr/bin/env bash
# Install what unsplit needs on Debian 12, idempotently, then run an optional make target.
#
#   ./setup.sh            install only
#   ./setup.sh demo       install, then `make demo` (a real gdb and lldb session on a split binary)
#   ./setup.sh test       install, then `make test`
#
# Debian packages come from apt (one `apt-get update`, only when something is missing).
# Python packages go into .venv, made from the system Python with --system-site-packages so that
# it sees python3-lldb-22; the debugger adapters add that venv's site-packages to the embedded
# interpreter (gdb and lldb both embed /usr/bin/python3), so pyelftools imports there too.
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(gdb lldb-22 python3-lldb-22 clang-22 libclang-rt-22-dev lld-22 llvm-22 llvm-22-tools bolt-22
          gcc g++ make binutils libc6-dev python3 python3-venv python3-pip
          # for the tests: glibc's debug info (frames in libc are named the same everywhere) and
          # LLVM 14 (llc-14, llvm-readobj-14: the oracle for the oldest bb address map format),
          # elfutils' debuginfod server (the fleet recipe's test serves debug files with it),
          # perf (unsplit fold's tests profile a BOLTed program with it)
          libc6-dbg llvm-14 debuginfod linux-perf)

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        echo "setup.sh: need root (or sudo) to install: $*" >&2; exit 1; fi
}

missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup.sh: installing ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
fi

# The venv is rebuilt when the requirements change (a stamp holds their hash).
stamp=.venv/.requirements.sha
want=$(cat requirements.txt requirements-dev.txt setup.cfg | sha256sum | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "setup.sh: preparing .venv"
    /usr/bin/python3 -m venv --system-site-packages .venv
    .venv/bin/pip install -q --disable-pip-version-check -r requirements-dev.txt
    .venv/bin/pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
    echo "$want" > "$stamp"
fi
# An `unsplit` command on PATH for everyone on the machine (root only; harmless otherwise).
if [ "$(id -u)" -eq 0 ] && [ ! -e /usr/local/bin/unsplit ]; then
    ln -s "$PWD/.venv/bin/unsplit" /usr/local/bin/unsplit
fi

if [ $# -gt 0 ]; then exec make "$@"; fi
