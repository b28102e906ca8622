"""perfmodel: hardware database and analytical model that predicts kernel time."""

__version__ = "0.1.0"
