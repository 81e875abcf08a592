"""Prospective reflection: a session's turns become memories (segment, extract, compress,
reconcile, commit), in the background too."""
