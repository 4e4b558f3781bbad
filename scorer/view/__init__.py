"""The HTML viewer: one self-contained, offline page of the score store (`scorer view`)."""

from scorer.view.page import render_page

__all__ = ["render_page"]
