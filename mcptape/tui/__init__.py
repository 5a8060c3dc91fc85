"""The terminal face of the interactive client (`mcptape tui`), on Textual: imported only by that command."""
