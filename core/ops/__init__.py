"""Operator tooling behind the `rmm` command: commands, export/import, progress."""
