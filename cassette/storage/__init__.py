"""The storage layer."""
