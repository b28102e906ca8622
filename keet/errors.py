"""Errors a user can act on: each renders as one line naming the input and the problem."""

from __future__ import annotations

from pathlib import Path


class KeetError(Exception):
    """Base class for every error the CLI reports as one line with exit status 2."""


class ProfileError(KeetError):
    """An input profile is missing, unreadable, of an unknown format, or corrupt."""

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = str(path)
        # one line whatever the problem quotes (decoder messages carry the file's own bytes)
        self.problem = " ".join(str(problem).split())
        super().__init__(f"{self.path}: {self.problem}")
