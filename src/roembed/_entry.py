"""The ``roembed`` console script: imports the command line inside a guard, so Ctrl-C while
numpy, pandas and scikit-learn load prints one line (exit 130), not a traceback."""
import sys


def run() -> None:
    try:
        from .cli import main
        main()
    except KeyboardInterrupt:
        sys.stderr.write("roembed: interrupted\n")
        sys.exit(130)
