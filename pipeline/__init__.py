"""Pure stage logic over records: no Ray, no database, no model weights."""
