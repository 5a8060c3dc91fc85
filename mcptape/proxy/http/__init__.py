"""HTTP transports: streamable HTTP and legacy HTTP+SSE, as upstream links (aiohttp's client)
and as downstream endpoints (aiohttp's server). Pure parts (SSE parsing, headers, routing)
live in modules of their own and are tested with plain values."""
