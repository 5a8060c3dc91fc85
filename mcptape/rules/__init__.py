"""Injection rules: answers mcptape gives to server-initiated requests (pure), and their result templates."""
