#!/usr/bin/env bash
# The main job: debug a program that crashes inside a cold fragment, in gdb and in lldb, with the
# plugin loaded; show `bt` and `bb where`. On a terminal it then leaves you in a live gdb session
# at the crash (DEMO_INTERACTIVE=0 skips that; DEMO_VARIANTS picks fixture variants: the
# default shows BOLT output without DWARF, where the debuggers alone have no name or line, and
# GCC PGO with DWARF).
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD/plugin

banner() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

show() {
variant=$1
prog=fixtures/build/$variant/crash
[ -x "$prog" ] || { echo "demo: $prog is missing: run 'make fixtures'" >&2; exit 1; }

banner "$variant: the fragments of $prog (nm)"
nm "$prog" | grep -E '\.(cold|warm|__part)' || true

banner "gdb, without the plugin: $prog crash"
gdb -nx -q -batch -iex "set debuginfod enabled off" -ex run -ex bt --args "$prog" crash 2>&1 \
    | grep -v '^\[' || true

banner "gdb, with the plugin"
gdb -nx -q -batch -iex "set debuginfod enabled off" -x gdb/unsplit_gdb.py \
    -ex run -ex bt -ex "bb where" --args "$prog" crash 2>&1 | grep -v '^\[' || true

banner "lldb-22, without the plugin"
lldb-22 --no-lldbinit -b -o "process launch" -k bt -- "$prog" crash 2>&1 || true

banner "lldb-22, with the plugin"
lldb-22 --no-lldbinit -b -o "command script import lldb/unsplit_lldb.py" \
    -o "process launch" -k bt -k "bb where" -- "$prog" crash 2>&1 || true

core=fixtures/build/$variant/crash.core
if [ -f "$core" ]; then
    banner "post-mortem: gdb $prog $core, with the plugin"
    gdb -nx -q -batch -iex "set debuginfod enabled off" -x gdb/unsplit_gdb.py \
        -ex bt -ex "bb where" "$prog" "$core" 2>&1 | grep -v '^\[' || true
fi

}

# LLDB's own unwinder in a cold fragment entered with a register pushed and left by a `ret` in
# its middle: alone it invents a caller there, so `finish` out of `step` runs on to the next
# breakpoint; with the plugin (the fragment's CFI given to LLDB) it stops in main's cold code.
frames() {
prog=fixtures/build/clang-mfs-nodebug/switch
[ -x "$prog" ] || return 0
banner "lldb-22, without the plugin: finish out of step, back into main.cold ($prog rare)"
lldb-22 --no-lldbinit -b -o "breakpoint set -n step" -o "process launch -- rare" \
    -o "thread step-out" -o bt "$prog" 2>&1 | sed -n '/^(lldb) thread step-out/,$p' || true
banner "lldb-22, with the plugin: the same"
lldb-22 --no-lldbinit -b -o "command script import lldb/unsplit_lldb.py" \
    -o "breakpoint set -n step" -o "process launch -- rare" -o "thread step-out" -o bt \
    "$prog" 2>&1 | sed -n '/^(lldb) thread step-out/,$p' || true
}

variants=${DEMO_VARIANTS:-bolt-all gcc-pgo}
for v in $variants; do show "$v"; done
frames
prog=fixtures/build/${variants%% *}/crash

if [ -t 0 ] && [ -t 1 ] && [ "${DEMO_INTERACTIVE:-1}" != 0 ]; then
    banner "your turn: a live gdb session stopped at the crash (try: bt, bb where, bb frame, quit)"
    exec gdb -nx -q -iex "set debuginfod enabled off" -x gdb/unsplit_gdb.py -ex run \
        --args "$prog" crash
fi
