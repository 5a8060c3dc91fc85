"""mcptape.servers"""
