"""The name and version of the file format (no pydantic: cheap to import)."""

FORMAT = "rollout-cassette"
VERSION = 1
