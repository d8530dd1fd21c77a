"""Frames of the popef-plugin/1 protocol (src/run/PROTOCOL.md): a 4-byte
ASCII tag, a u64 little-endian length, the payload. One header reader
checks every length against the cap for its tag before anything is
allocated, so a corrupt length cannot make the bridge allocate without
bound."""

import json
import struct

from .errors import ProtocolViolation

# The caps of PROTOCOL.md ("What each side enforces"), the host's too.
MAX_JSON_FRAME = 64 << 20
MAX_TENSOR_FRAME = 16 << 30
CAPS = {"JSON": MAX_JSON_FRAME, "TENS": MAX_TENSOR_FRAME}

# Chunked payloads go out in frames of this size (PROTOCOL.md, "Chunked tensors").
CHUNK = 4 << 20

# Run inputs of at least this size are received into buffers kept from one
# run to the next: runs of a model send the same sizes every time, and fresh
# memory costs a page fault per 4 KiB (a third of a 64 MiB transfer).
REUSE_FROM = 1 << 20

# Replies smaller than this go out in one write (one pipe wake-up).
JOIN_BELOW = 1 << 20


def header(tag, length):
    return tag + struct.pack("<Q", length)


class Channel:
    """Reads and writes frames on a pair of binary streams."""

    def __init__(self, stdin, stdout):
        self.stdin = stdin
        self.stdout = stdout
        # Receive buffers of large run inputs, by name (see REUSE_FROM).
        # execute() has returned, and a buffer is no longer used, before the
        # next run's bytes arrive.
        self.run_inputs = {}

    def read_exact(self, n):
        chunks = []
        while n > 0:
            chunk = self.stdin.read(n)
            if not chunk:
                raise EOFError()
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def read_header(self, expect):
        """The length of the next frame, which must carry tag `expect` and fit its cap."""
        raw = self.read_exact(12)
        tag = raw[:4].decode("ascii", "replace")
        (length,) = struct.unpack("<Q", raw[4:])
        if tag != expect:
            raise ProtocolViolation("expected a %s frame, got %r" % (expect, tag))
        if length > CAPS[expect]:
            raise ProtocolViolation("a %s frame of %d bytes exceeds the limit of %d" % (expect, length, CAPS[expect]))
        return length

    def read_frame(self, expect):
        return self.read_exact(self.read_header(expect))

    def read_frame_into(self, expect, buffer):
        """A frame whose length must equal len(buffer), read straight into it."""
        length = self.read_header(expect)
        if length != len(buffer):
            raise ProtocolViolation("tensor frame of %d bytes, %d announced" % (length, len(buffer)))
        view = memoryview(buffer)
        done = 0
        while done < length:
            n = self.stdin.readinto(view[done:])
            if not n:
                raise EOFError()
            done += n
        return buffer

    def read_chunks(self, announcement):
        """The frames of a chunked tensor, one by one, as they arrive."""
        left = announcement["bytes"]
        while left > 0:
            data = self.read_frame("TENS")
            if not data or len(data) > left:
                raise ProtocolViolation("tensor %s: a chunk of %d bytes with %d left" % (announcement["name"], len(data), left))
            left -= len(data)
            yield data

    def read_message(self):
        """A message and its tensors; chunked tensors are left for the handler to stream."""
        body = self.read_frame("JSON")
        try:
            message = json.loads(body.decode("utf-8"))
        except ValueError as e:
            raise ProtocolViolation("a JSON frame does not hold valid JSON: %s" % e) from e
        if not isinstance(message, dict):
            raise ProtocolViolation("a JSON frame holds no object")
        tensors = []
        for t in message.get("tensors", []):
            if t.get("chunked"):
                continue
            if message.get("type") == "run" and t["bytes"] >= REUSE_FROM:
                buffer = self.run_inputs.get(t["name"])
                if buffer is None or len(buffer) != t["bytes"]:
                    buffer = bytearray(t["bytes"])
                    self.run_inputs[t["name"]] = buffer
                tensors.append((t, self.read_frame_into("TENS", buffer)))
                continue
            data = self.read_frame("TENS")
            if len(data) != t["bytes"]:
                raise ProtocolViolation("tensor %s: %d bytes announced, %d sent" % (t["name"], t["bytes"], len(data)))
            tensors.append((t, data))
        return message, tensors

    def write_message(self, message, tensors=()):
        body = json.dumps(message).encode("utf-8")
        parts = [header(b"JSON", len(body)), body]
        for data in tensors:
            parts.append(header(b"TENS", len(data)))
            parts.append(data)
        # Small replies in one write; large tensors without a joining copy.
        if sum(len(p) for p in parts) < JOIN_BELOW:
            self.stdout.write(b"".join(parts))
        else:
            for p in parts:
                self.stdout.write(p)
        self.stdout.flush()

    def write_chunked(self, message, data):
        """A message announcing one chunked tensor, then its bytes in frames of CHUNK."""
        view = memoryview(data).cast("B")
        announcement = {"name": message.get("name", "payload"), "dtype": "U8", "shape": [len(view)], "bytes": len(view), "chunked": True}
        body = json.dumps(dict(message, tensors=[announcement])).encode("utf-8")
        self.stdout.write(header(b"JSON", len(body)) + body)
        for start in range(0, len(view), CHUNK):
            part = view[start:start + CHUNK]
            self.stdout.write(header(b"TENS", len(part)))
            self.stdout.write(part)
        self.stdout.flush()

    def error(self, id_, code, message, hint=None):
        reply = {"type": "error", "id": id_, "code": code, "message": message}
        if hint:
            reply["hint"] = hint
        self.write_message(reply)
