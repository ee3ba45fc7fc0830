"""``python -m cassette ...``: the ``cassette`` command, where the script is not on PATH."""

from .cli import main

__all__ = ["main"]

if __name__ == "__main__":
    main(prog_name="cassette")
