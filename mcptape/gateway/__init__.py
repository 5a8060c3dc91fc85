"""The gateway of `mcptape proxy`: the aiohttp app, its sessions, pass-through, security and listener."""
