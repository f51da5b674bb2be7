"""The model every source feeds and every layer reads: procedures, fragments, blocks, locations,
and a stack's frames with the rules that name them. Imports only names/."""
