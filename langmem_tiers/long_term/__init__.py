"""Long-term memory: the store (``store/``, with its search in ``store/search/``) and the
memory engine built on it (``engine/``). The store never imports the engine."""
