"""The wire: frames as they were on the wire, JSON-RPC ids, JSON text positions, and the protocol facts."""
