"""The exceptions loopc raises (docs/python.md, "Errors").

Every one is a :class:`loopc.Error`, which carries the message, the place in
the source when there is one (``file``, ``line``, ``column``, counted from 1)
and ``formatted``: the diagnostic as the command line prints it, with the
source line and a caret. ``str(error)`` is the formatted text.
"""


class Error(Exception):
    """An error of loopc, located in the program's source when it has a place."""

    def __init__(self, message, formatted="", file="", line=0, column=0):
        super().__init__(message)
        self.message = message
        self.formatted = formatted or f"loopc: error: {message}"
        self.file = file or None
        self.line = line or None
        self.column = column or None

    def __str__(self):
        return self.formatted.rstrip("\n")


class CompileError(Error):
    """The program does not parse or check, or a kernel cannot be compiled."""


class ArgumentError(Error, TypeError):
    """The arguments of a call do not fit the kernel: a type, a shape, a size, a name."""


class RunError(Error, RuntimeError):
    """The kernel failed while it ran: an index out of range, a GPU fault."""


class DeviceError(Error):
    """The device asked for is unknown or not on this machine."""
