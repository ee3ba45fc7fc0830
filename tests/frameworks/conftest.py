"""side/ holds the framework scenarios: they import packages that only the side venv has, and
tests/frameworks/test_frameworks.py runs them there; the main run never collects them."""

collect_ignore = ["side"]
