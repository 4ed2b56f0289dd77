"""Puts this folder on ``sys.path`` (pytest's default import mode does so for a conftest's
folder), so test modules in sub-folders share helpers such as :mod:`cli_testkit`."""
