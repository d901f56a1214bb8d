"""Stateful Ray actors: every long-lived resource (a model, a connection) lives here."""
