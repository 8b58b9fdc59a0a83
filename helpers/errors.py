"""The package's error types: each names the problem in one line (no stack of retries)."""


class HarmsError(Exception):
    """Base class: the command line prints ``harms: error: <message>`` and exits 2."""


class InputError(HarmsError, ValueError):
    """A malformed input file or table: names the file, the row and the problem."""


class DataNotFoundError(HarmsError, FileNotFoundError):
    """A data set that is neither in the data directories nor downloadable."""


class ModelUnavailableError(HarmsError, OSError):
    """A model that cannot be loaded: names the model and how to obtain it."""
