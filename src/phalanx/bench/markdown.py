"""Markdown tables for the bench reports."""

from __future__ import annotations


def markdown_table(columns: list[str], rows: list[list[str]]) -> str:
    """A markdown table; a row shorter than the header (an invalid setting) is padded."""
    lines = ["| " + " | ".join(columns) + " |", "|---" * len(columns) + "|"]
    lines += ["| " + " | ".join(row + [""] * (len(columns) - len(row))) + " |" for row in rows]
    return "\n".join(lines)
