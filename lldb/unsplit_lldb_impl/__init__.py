"""The LLDB adapter's modules, imported by ``lldb/unsplit_lldb.py``, never by the core
(docs/architecture.md lists them). State that must survive a second ``command script import``
lives in :mod:`.state`."""
