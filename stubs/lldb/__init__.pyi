# Minimal typing stubs for LLDB's SWIG module (python3-lldb-22): every name is Any. LLDB ships no
# stubs and its API is generated; the adapter's own code is what mypy --strict checks.
from typing import Any

def __getattr__(name: str) -> Any: ...
