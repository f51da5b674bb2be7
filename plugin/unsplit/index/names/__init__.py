"""Names: demangling as each debugger words it, and which procedures a typed name means.
The lowest layer of the index: it imports nothing of it."""
