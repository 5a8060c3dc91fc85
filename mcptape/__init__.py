"""mcptape: a man-in-the-middle recorder for the Model Context Protocol."""

__version__ = "0.1.0"
