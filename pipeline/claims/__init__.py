"""Claims: segmentation, Selection, Claimify, the grounding gate, LLM prompts and answers."""
