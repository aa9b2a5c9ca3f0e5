"""Errors a user can cause (bad files, unknown names); each carries a one-line message."""

from __future__ import annotations


class RooflineError(Exception):
    """Base class: the message is one line, fit for stderr or an HTTP JSON body.

    ``status`` is the HTTP status of a request that runs into it.
    """

    status = 422


class ProfileError(RooflineError):
    """A profile file is missing, unreadable, corrupt, truncated, empty or not an XSpace."""

    status = 422

    def __init__(self, path: object, problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class UnreadableProfile(ProfileError):
    """The file could not be read at all (permissions, I/O): nothing is known of its content."""


class NotFound(RooflineError):
    """An unknown run, host, step or tag was asked for."""

    status = 404
