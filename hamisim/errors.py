"""Exceptions shared by every hamisim reader and command."""
from __future__ import annotations


class HamisimError(Exception):
    """Base class of hamisim's own errors."""


class InputError(HamisimError):
    """Bad user input, located in a file.

    ``str(err)`` is ``"file:line: problem"`` (``line`` omitted when unknown); the
    CLI prints exactly that and exits with status 2.
    """

    def __init__(self, path: str | None, line: int | None, problem: str) -> None:
        self.path = path
        self.line = line
        self.problem = problem
        super().__init__(self.format())

    def format(self) -> str:
        if self.path is None:
            return self.problem
        if self.line is None:
            return f"{self.path}: {self.problem}"
        return f"{self.path}:{self.line}: {self.problem}"


class InputWarning(UserWarning):
    """Input that is valid but probably means something else, located in a file.

    ``str(w)`` is ``where: warning: problem`` (``where`` is ``file:line``, or
    e.g. ``--gpu-policy``); the CLI prints it on stderr, once per message,
    and the exit status is unchanged.
    """

    def __init__(self, where: str | None, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: warning: {problem}" if where else f"warning: {problem}")


class SchedulerError(HamisimError):
    """A HAMi Filter *error* (not an unschedulable result), e.g. invalid
    ``hami.io/device-scoring-weights``; HAMi reports these as scheduler errors."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (``timeout``, a batch system, a CI job cancelling), raised where
    Ctrl-C raises :class:`KeyboardInterrupt` once the CLI has installed
    :func:`hamisim.io.outputs.sigterm_as_interrupt`: a subclass, so that every
    ``except KeyboardInterrupt`` cleanup (the results folder's above all) runs
    for it too. The CLI exits with status 143 (128 + SIGTERM)."""
