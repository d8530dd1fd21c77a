"""The one error the bridge reports as a plain message with a code (bad
input, an SDK that lacks a call); anything else is the SDK's own error."""


class UserError(Exception):
    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code = code


class ProtocolViolation(Exception):
    """The host broke the frame rules of src/run/PROTOCOL.md: the stream is out of step, so the bridge stops."""
