"""Replay: the tape player, response comparison and the mock server (`mcptape replay`, `mcptape serve`).

Empty for now: recordings made today already hold what replay needs (exact frames,
directions, correlation by direction and id); the player is the next piece of work.
"""
