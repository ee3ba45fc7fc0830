"""Adapters: one module per thing the cassette wraps, each imported on its own so that an
optional dependency is only needed by the adapter that uses it."""
