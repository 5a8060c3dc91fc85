"""Links: the transports a relay joins (our stdio, a spawned process, in-memory peers for tests)."""
