"""Documents: sources and archives, MIME, conversion, blocks, structure, chunks."""
