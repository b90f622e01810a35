"""SQL plumbing shared by the store, the message log and the HTTP API's keys: the database
wrapper, the SQLite and PostgreSQL dialects with their migrations, and the I/O drivers."""
