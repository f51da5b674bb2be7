"""Debugging policies on top of the index: breakpoints by original procedure, stepping across
fragments, backtraces from call frame information, and the Breakpad CFI export LLDB reads.
Talks to a debugger only through `unsplit.host`."""
