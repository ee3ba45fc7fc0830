"""The format layer."""
