"""The _common layer."""
