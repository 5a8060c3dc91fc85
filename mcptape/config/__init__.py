"""mcpServers config files: the upstream registry, editing entries in place, and wrapping them for `record`."""
