"""Long-term memory: the store, its backends, ranking and the memory engine."""
