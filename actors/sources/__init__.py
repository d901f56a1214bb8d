"""Readers of other stores (vector databases and their exports), each behind `stores.StoreReader`."""
