"""The run directory: its files (store), the manifest's records and the book every change goes through."""
