"""The replay layer."""
