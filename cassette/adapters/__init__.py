"""Adapters: one module per thing the cassette wraps.

Each is imported on its own (``from cassette.adapters.openai import wrap_openai``) so
that an optional dependency is only needed by the adapter that uses it.
"""
