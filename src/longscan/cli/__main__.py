"""``python -m longscan.cli``: the command line, as the ``longscan`` script runs it."""

from longscan.cli import app

app()
