"""ctxbench's runtime: messages, token accounting, the context a strategy sees, and (later) the
agent loop, the mock model and the run machinery."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ctxbench")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
