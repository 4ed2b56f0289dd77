"""``python -m roembed``: the ``roembed`` command line (for environments where the console script is not on PATH)."""
from ._entry import run

if __name__ == "__main__":
    run()
