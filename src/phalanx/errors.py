"""Errors about what the user asked for. The command line prints them as one line and exits 2;
any other exception is a bug and keeps its traceback."""


class ConfigError(ValueError):
    """A flag, config field or file given by the user is not valid; the message says which,
    what was given and what is allowed."""
