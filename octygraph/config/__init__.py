"""Settings: environment variables, their table, and private files."""
