"""`python -m mcptape` runs the command line."""

from mcptape.cli.main import main

main()
