"""Facts: normalization, vocabulary, names, the resolution rule, adjudication rules."""
