"""The LLDB adapter's modules: imported by ``lldb/unsplit_lldb.py``, never by the core.

- :mod:`.host`     the core's Host protocol over SBTarget/SBFrame
- :mod:`.formats`  pure rewriting of LLDB format strings (``frame-format``, ``thread-format``)
- :mod:`.naming`   the ``${script.frame:…}`` callbacks and installing/restoring the formats
- :mod:`.commands` the ``bb`` container and one class per entry of ``unsplit.commands.COMMANDS``
- :mod:`.cfi_symbols` LLDB's own unwinder made exact in moved fragments: their CFI given to
  LLDB as Breakpad symbol files (``bb exact-frames``)
- :mod:`.stepping` ``bb next``/``bb step``/…: a scripted thread plan the core drives
- :mod:`.unwinding` registers and memory for the core's CFI unwinder (``bb bt``)
- :mod:`.breakpoints` ``bb break``: one breakpoint whose scripted resolver asks the core

State that must survive ``command script import`` running twice lives in :mod:`.state`.
"""
