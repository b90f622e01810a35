"""The long-term store: a LangGraph ``BaseStore`` over SQLite or PostgreSQL, with vectors in
the database or in Qdrant."""
