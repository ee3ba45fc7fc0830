"""The dataset layer."""
