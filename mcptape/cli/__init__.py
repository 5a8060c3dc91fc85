"""mcptape.cli"""
