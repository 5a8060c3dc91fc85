"""The relay and its pieces: links (transports), the relay itself, and addons such as the recorder."""
