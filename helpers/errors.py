"""The package's error types: each names the problem in one line (no stack of retries)."""


def first_line(exc: BaseException, *, with_type: bool = False) -> str:
    """The first non-blank line of ``exc``'s message (a library's can run to pages), prefixed by its
    type when ``with_type``; the type alone when the message is empty."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    if not lines:
        return type(exc).__name__
    return f"{type(exc).__name__}: {lines[0]}" if with_type else lines[0]


class HarmsError(Exception):
    """Base class: the command line prints ``harms: error: <message>`` and exits 2."""


class InputError(HarmsError, ValueError):
    """A malformed input file or table: names the file, the row and the problem."""


class DataNotFoundError(HarmsError, FileNotFoundError):
    """A data set that is neither in the data directories nor downloadable."""


class ModelUnavailableError(HarmsError, OSError):
    """A model that cannot be loaded: names the model and how to obtain it."""


class Interrupted(HarmsError):
    """Ctrl-C or SIGTERM during long work (``harms`` turns SIGTERM into the same
    KeyboardInterrupt). The message says exactly what was saved, e.g.
    ``interrupted: 96 of 250 sentences are saved in the score cache; rerun to resume``; the
    command line prints it and exits 130 after Ctrl-C, 143 after SIGTERM (128 + the signal)."""

    def __init__(self, message: str, *, saved: int = 0, total: int = 0):
        super().__init__(message)
        self.saved, self.total = saved, total
