#!/usr/bin/env python3
"""popef-toolkit's bridge to Graphcore's Model Runtime (the `ipu` plugin,
`popef import`, `popef export`, and reading SDK-written files for dump,
config and validate).

Speaks the popef-plugin/1 protocol (src/run/PROTOCOL.md) on stdin/stdout.
On `open` it rebuilds the model in the Poplar SDK's own PopEF encoding with
`popef.Writer` (the host sends the metadata as JSON and every payload as a
tensor frame, so this script never reads the open layout), loads it with
`model_runtime.ModelRunner`, and runs it on `run`.

The SDK's Python modules are imported when the host says hello; when they
are missing the bridge answers that it is not available, and why.

NOT verified on IPU hardware or against a real Poplar SDK. Every SDK call
it makes is listed in SDK-API.md beside this file, with the public code or
documentation that shows it, the operations that make it and what happens
when it is missing; popef_bridge/sdk.py's SDK_CALLS is the same list,
checked by `popef doctor`. The tests run it against the strict simulated SDK
in fixtures/sim-sdk/, in each SDK release variant.

This file is the program: the request table and the state of one bridge
process. The parts are in popef_bridge/ (frames, sdk, metadata, session,
convert).
"""

import os
import signal
import sys
import traceback

# The package beside this file; no bytecode left in the installed package.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from popef_bridge.convert import do_export, do_import, drain  # noqa: E402
from popef_bridge.errors import ProtocolViolation, UserError, os_error_hint, os_error_message  # noqa: E402
from popef_bridge.frames import Channel  # noqa: E402
from popef_bridge.sdk import SDK_HINT, Sdk  # noqa: E402
from popef_bridge.session import Session  # noqa: E402

PROTOCOL = "popef-plugin/1"
BRIDGE_VERSION = "1"


def widen_pipes():
    """The host's stdio channels hold little by default (64 KiB for a Linux
    pipe; Node.js hands its children Unix socket pairs of about 208 KiB):
    a wider one moves 4 MiB chunks in fewer wake-ups of either process.
    Best effort: the kernel may cap or refuse the size."""
    import stat
    for fd in (0, 1):
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISSOCK(mode):
                import socket
                # A socket object on a duplicate: closing it leaves stdio open.
                with socket.socket(fileno=os.dup(fd)) as s:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF if fd == 1 else socket.SO_RCVBUF, 4 << 20)
            elif stat.S_ISFIFO(mode):
                import fcntl
                fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
        except (ImportError, OSError, ValueError):
            pass


def log(*args):
    print("ipu_bridge:", *args, file=sys.stderr, flush=True)


class Bridge:
    """One bridge process: its channel, the SDK, the open session, and the
    warnings (what the SDK could not store) of the request being answered."""

    def __init__(self, channel):
        self.channel = channel
        self.sdk = Sdk()
        self.available = False
        self.session = None
        self.warnings = []
        self.done = False
        self.handlers = {
            "hello": self.hello,
            "doctor": self.doctor,
            "open": self.open,
            "run": self.run,
            "import": self.import_,
            "export": self.export,
            "close": self.close,
        }

    def serve(self):
        while not self.done:
            try:
                message, tensors = self.channel.read_message()
            except EOFError:
                break
            id_ = message.get("id", -1)
            handler = self.handlers.get(message.get("type"))
            del self.warnings[:]
            try:
                if handler is None:
                    self.channel.error(id_, "E_PROTOCOL", "unknown request %r" % message.get("type"))
                else:
                    handler(id_, message, tensors)
            except UserError as e:
                self.channel.error(id_, e.code, str(e))
            except (ProtocolViolation, EOFError):
                raise
            except OSError as e:
                # A file the bridge reads or writes (a read-only or full disk): the OS's reason, not an SDK trace.
                self.channel.error(id_, "E_IO", os_error_message(e), os_error_hint(e))
            except Exception as e:  # the SDK's own errors: its message, and the trace on stderr
                log(traceback.format_exc())
                self.channel.error(id_, "E_SDK", "%s: %s" % (type(e).__name__, e), "see the Model Runtime / Poplar messages above")

    def unavailable(self, id_):
        self.channel.error(id_, "E_SDK", "the Poplar SDK is not available", SDK_HINT)

    def hello(self, id_, _message, _tensors):
        missing = self.sdk.load()
        self.available = not missing
        reply = {"type": "hello", "id": id_, "protocol": PROTOCOL, "plugin": "ipu", "version": BRIDGE_VERSION, "available": self.available}
        if missing:
            # numpy is no SDK module: a reason and a hint of its own, so that an SDK that imports is not blamed.
            sdk_missing = [m for m in missing if not m.startswith("numpy ")]
            numpy_missing = [m for m in missing if m.startswith("numpy ")]
            reasons = []
            hints = []
            if sdk_missing:
                reasons.append("the Poplar SDK's Python modules cannot be imported: " + "; ".join(sdk_missing))
                hints.append(SDK_HINT)
            if numpy_missing:
                reasons.append("numpy cannot be imported: " + numpy_missing[0][len("numpy (") : -1])
                hints.append("install numpy into the interpreter that runs the bridge (python3 -m pip install numpy, in POPEF_PYTHON's environment)")
            reply["reason"] = "; ".join(reasons)
            reply["hint"] = "; ".join(hints)
        self.channel.write_message(reply)

    def doctor(self, id_, _message, _tensors):
        self.channel.write_message(dict(self.sdk.doctor_report(), type="doctor", id=id_))

    def open(self, id_, message, tensors):
        if not self.available:
            return self.unavailable(id_)
        # Only what running this model calls: feeds are not written for a run.
        self.sdk.require("run", {b["kind"] for b in message["model"]["blobs"]} - {"feed"})
        if self.session is not None:
            self.session.close()
            self.session = None
        self.session = Session(self.sdk, message, tensors, self.warnings)
        for w in self.warnings:
            log("warning:", w)
        reply = {"type": "opened", "id": id_, "inputs": [Session.public(x) for x in self.session.inputs],
                 "outputs": [Session.public(x) for x in self.session.outputs]}
        if self.warnings:
            reply["warnings"] = list(self.warnings)
        self.channel.write_message(reply)

    def run(self, id_, _message, tensors):
        if self.session is None:
            return self.channel.error(id_, "E_STATE", "run before open")
        results = self.session.run(tensors)
        self.channel.write_message({"type": "result", "id": id_, "tensors": [dict(spec, bytes=len(data)) for (spec, data) in results]},
                                   [data for (_, data) in results])

    def import_(self, id_, message, _tensors):
        if not self.available:
            return self.unavailable(id_)
        self.sdk.require("import" if message.get("executables", True) is not False else "read")
        do_import(self.channel, self.sdk, id_, message, self.warnings)

    def export(self, id_, message, _tensors):
        if not self.available:
            # The payload frames still have to be consumed to keep the stream in step.
            drain([self.channel.read_chunks(a) for a in message.get("tensors", [])])
            return self.unavailable(id_)
        do_export(self.channel, self.sdk, id_, message, self.warnings)

    def close(self, id_, _message, _tensors):
        self.stop()
        self.channel.write_message({"type": "closed", "id": id_})
        self.done = True

    def stop(self):
        if self.session is not None:
            self.session.close()
            self.session = None


def main():
    bridge = Bridge(Channel(sys.stdin.buffer, sys.stdout.buffer))

    def stop_on_signal(signum, _frame):
        # The host stops the bridge with SIGTERM (Ctrl-C reaches it the same way) and
        # SIGKILLs it soon after: remove the session's copy of the model first, then
        # leave at once, without the interpreter's slow teardown of the SDK.
        if bridge.session is not None:
            bridge.session.remove_files()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop_on_signal)
    signal.signal(signal.SIGINT, stop_on_signal)
    widen_pipes()
    try:
        bridge.serve()
    except ProtocolViolation as e:
        # The stream is out of step: nothing more can be read in order.
        log("protocol violation: %s" % e)
        sys.exit(2)
    finally:
        bridge.stop()


if __name__ == "__main__":
    main()
