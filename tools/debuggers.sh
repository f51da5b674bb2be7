#!/usr/bin/env bash
# Install the other debuggers the e2e matrix runs (issue 17) into .debuggers/, idempotently:
#
#   .debuggers/bin/gdb-18   GDB 18.1 (PyPI wheel gdb-for-pwndbg, in a venv of /usr/bin/python3)
#   .debuggers/bin/lldb-19  Debian's lldb-19 unpacked beside the installed lldb-22
#
# Debian's python3-lldb-19 cannot be installed beside python3-lldb-22 (apt removes the other),
# so the lldb-19 packages are fetched with `apt-get download` and unpacked with `dpkg -x` into a
# private prefix; a wrapper points LD_LIBRARY_PATH, PYTHONPATH and LLDB_DEBUGSERVER_PATH at it.
# Nothing setup.sh installs is touched. The downloads are kept in
# ${UNSPLIT_DEBUGGERS_CACHE:-~/.cache/unsplit/debuggers} (and pip's own cache), so a fresh clone
# unpacks them again without fetching; a stamp per debugger says it is complete.
#
#   tools/debuggers.sh          install both (quiet when already there)
#   tools/debuggers.sh gdb-18   only one of them
set -euo pipefail
cd "$(dirname "$0")/.."

ROOT=$PWD/.debuggers
CACHE=${UNSPLIT_DEBUGGERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/unsplit/debuggers}
GDB_WHEEL="gdb-for-pwndbg==18.1.0.post1"
LLDB_VERSION="1:19.1.7-3~deb12u1"
LLDB_PACKAGES=(lldb-19 liblldb-19 python3-lldb-19 libllvm19 libclang-cpp19)

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        echo "debuggers.sh: need root (or sudo) to run: $*" >&2; exit 1; fi
}

install_gdb18() {
    local dir=$ROOT/gdb-18 stamp=$ROOT/gdb-18/.stamp
    if [ "$(cat "$stamp" 2>/dev/null)" != "$GDB_WHEEL" ]; then
        echo "debuggers.sh: installing GDB 18.1 ($GDB_WHEEL) into $dir"
        rm -rf "$dir"
        /usr/bin/python3 -m venv "$dir"
        "$dir/bin/pip" install -q --disable-pip-version-check "$GDB_WHEEL"
        echo "$GDB_WHEEL" > "$stamp"
    fi
    mkdir -p "$ROOT/bin"
    ln -sfn ../gdb-18/bin/gdb "$ROOT/bin/gdb-18"
}

download_lldb19() {
    # apt-get download needs the package lists; fetch them once if they do not know lldb-19.
    mkdir -p "$CACHE"
    local want=() p
    for p in "${LLDB_PACKAGES[@]}"; do
        compgen -G "$CACHE/${p}_*.deb" >/dev/null || want+=("$p=$LLDB_VERSION")
    done
    [ ${#want[@]} -eq 0 ] && return
    if ! (cd "$CACHE" && apt-get download -qq "${want[@]}" 2>/dev/null); then
        as_root apt-get update -qq
        (cd "$CACHE" && apt-get download -qq "${want[@]}")
    fi
}

install_lldb19() {
    local prefix=$ROOT/lldb-19 stamp=$ROOT/lldb-19/.stamp
    if [ "$(cat "$stamp" 2>/dev/null)" != "$LLDB_VERSION" ]; then
        echo "debuggers.sh: unpacking LLDB $LLDB_VERSION into $prefix"
        download_lldb19
        rm -rf "$prefix"
        mkdir -p "$prefix"
        local p
        for p in "${LLDB_PACKAGES[@]}"; do
            dpkg -x "$(compgen -G "$CACHE/${p}_*.deb" | head -1)" "$prefix"
        done
        echo "$LLDB_VERSION" > "$stamp"
    fi
    mkdir -p "$ROOT/bin"
    cat > "$ROOT/bin/lldb-19" <<'EOF'
#!/bin/sh
# LLDB 19 from the private prefix tools/debuggers.sh unpacked (its libraries, Python module and
# lldb-server, never the system's lldb-22 ones).
P=$(cd "$(dirname "$0")/../lldb-19" && pwd)
export LD_LIBRARY_PATH="$P/usr/lib/llvm-19/lib:$P/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$P/usr/lib/llvm-19/lib/python3.11/site-packages${PYTHONPATH:+:$PYTHONPATH}"
export LLDB_DEBUGSERVER_PATH="$P/usr/lib/llvm-19/bin/lldb-server"
exec "$P/usr/lib/llvm-19/bin/lldb" "$@"
EOF
    chmod +x "$ROOT/bin/lldb-19"
}

which=${1:-all}
case $which in
    all) install_gdb18; install_lldb19 ;;
    gdb-18) install_gdb18 ;;
    lldb-19) install_lldb19 ;;
    *) echo "debuggers.sh: unknown debugger $which (gdb-18, lldb-19)" >&2; exit 2 ;;
esac
