"""Time: reading dates in text, claim and fact windows."""
