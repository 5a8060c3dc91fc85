"""The command line: one module per command, imported lazily by `mcptape.cli.main`."""
