"""The LLDB adapter's modules: imported by ``lldb/unsplit_lldb.py``, never by the core.

- :mod:`.host`     the core's Host protocol over SBTarget/SBFrame
- :mod:`.formats`  pure rewriting of LLDB format strings (``frame-format``, ``thread-format``)
- :mod:`.naming`   the ``${script.frame:…}`` callbacks and installing/restoring the formats
- :mod:`.commands` the ``bb`` container and one class per entry of ``unsplit.commands.COMMANDS``
- :mod:`.provider` the probe for ``SBTarget.RegisterScriptedFrameProvider``
- :mod:`.breakpoints` ``bb break``: one breakpoint whose scripted resolver asks the core

State that must survive ``command script import`` running twice lives in :mod:`.state`.
"""
