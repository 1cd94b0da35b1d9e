"""Lines phalanx prints to a file or a pipe stay one line each."""

from __future__ import annotations

import io

from phalanx.core.console import MIN_WIDTH, wide_console


def test_a_long_line_to_a_file_stays_one_line() -> None:
    out = io.StringIO()
    line = " | ".join(f"part {i} of a long progress line" for i in range(9))
    assert len(line) > MIN_WIDTH + 100
    wide_console(out).print(line)
    assert out.getvalue() == line + "\n"
