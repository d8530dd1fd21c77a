"""The one error the bridge reports as a plain message with a code (bad
input, an SDK that lacks a call); anything else is the SDK's own error."""

import errno
import os


class UserError(Exception):
    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code = code


class ProtocolViolation(Exception):
    """The host broke the frame rules of src/run/PROTOCOL.md: the stream is out of step, so the bridge stops."""


OS_HINTS = {
    "EROFS": "choose a writable destination",
    "ENOSPC": "free some disk space and try again",
    "EACCES": "check the file permissions",
    "EPERM": "check the file permissions",
    "ENOENT": "check the path",
}


def os_error_code(e):
    return errno.errorcode.get(e.errno or 0, "")


def os_error_message(e):
    """PATH: the file system refused it: EROFS (Read-only file system).

    PATH is the file the user asked for, not the temporary sibling written first.
    """
    name = e.filename or ""
    base = os.path.basename(name)
    if base.startswith(".") and ".popef-tmp-" in base:
        name = os.path.join(os.path.dirname(name), base[1 : base.index(".popef-tmp-")])
    return "%s: the file system refused it: %s (%s)" % (name, os_error_code(e) or "error", e.strerror or e)


def os_error_hint(e):
    return OS_HINTS.get(os_error_code(e), "check the path and its file system")
