"""The store's search: BM25 over stemmed terms, fusion with dense scores, hybrid ranking."""
