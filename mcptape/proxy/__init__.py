"""mcptape.proxy"""
