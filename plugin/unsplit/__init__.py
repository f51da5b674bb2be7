"""unsplit: debug hot/cold split code as if it had never been split.

The core package. It never imports gdb or lldb (tests/unit/test_layering.py enforces it): the
debugger adapters in ../../gdb and ../../lldb call into it through the primitives of
:mod:`unsplit.host`.
"""

__version__ = "0.1.0"
