"""hamisim's version, in a module of its own so that any part can name it
without importing the package root (which loads the backend switch)."""

__version__ = "0.1.0"
