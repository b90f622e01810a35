"""SQL plumbing shared by the store, the message log and the HTTP API's keys: the database
wrapper, the SQLite and PostgreSQL dialects, the migration runner, and the I/O drivers."""
