"""The memory engine: the write pipeline, episodic/semantic/procedural memory, conflicts,
versions, consolidation, lifecycle and replay, on top of the store."""
