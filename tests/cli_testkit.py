"""Helpers shared by the command-line tests."""


def one_line_error(result, *fragments):
    """Asserts a CLI result is exit 2 with one line on stderr containing every fragment; returns the line."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]
