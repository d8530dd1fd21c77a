#!/usr/bin/env python3
"""popef-toolkit's bridge to Graphcore's Model Runtime (the `ipu` plugin).

Speaks the popef-plugin/1 protocol (src/run/PROTOCOL.md) on stdin/stdout.
On `open` it rebuilds the model in the Poplar SDK's own PopEF encoding with
`popef.Writer` (the host sends the metadata as JSON and every payload as a
tensor frame, so this script never reads the open layout), loads it with
`model_runtime.ModelRunner`, and runs it on `run`.

The SDK's Python modules are imported when the host says hello; when they
are missing the bridge answers that it is not available, and why.

NOT verified on IPU hardware or against a real Poplar SDK. Every SDK call
it makes is listed in SDK-API.md beside this file, with the public code or
documentation that shows it and what happens when it is missing; the
table SDK_CALLS below is the same list, checked by `popef doctor`. The
tests run it against the strict simulated SDK in fixtures/sim-sdk/, in
each SDK release variant.
"""

import datetime
import errno
import json
import os
import platform
import struct
import sys
import shutil
import signal
import tempfile
import traceback

PROTOCOL = "popef-plugin/1"
BRIDGE_VERSION = "1"

stdin = sys.stdin.buffer
stdout = sys.stdout.buffer


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


# ---------------------------------------------------------------- frames

def read_exact(n):
    chunks = []
    while n > 0:
        chunk = stdin.read(n)
        if not chunk:
            raise EOFError()
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(expect):
    header = read_exact(12)
    tag = header[:4].decode("ascii", "replace")
    (length,) = struct.unpack("<Q", header[4:])
    if tag != expect:
        raise ValueError("expected a %s frame, got %r" % (expect, tag))
    return read_exact(length)


def read_chunks(announcement):
    """The frames of a chunked tensor, one by one, as they arrive."""
    left = announcement["bytes"]
    while left > 0:
        data = read_frame("TENS")
        if not data or len(data) > left:
            raise ValueError("tensor %s: a chunk of %d bytes with %d left" % (announcement["name"], len(data), left))
        left -= len(data)
        yield data


# Receive buffers of large run inputs, by name, kept from one run to the next:
# runs of a model send the same sizes every time, and fresh memory costs a page
# fault per 4 KiB (a third of a 64 MiB transfer). execute() has returned, and
# the buffer is no longer used, before the next run's bytes arrive.
RUN_INPUTS = {}
REUSE_FROM = 1 << 20


def read_frame_into(expect, buffer):
    """A frame whose length must equal len(buffer), read straight into it."""
    header = read_exact(12)
    tag = header[:4].decode("ascii", "replace")
    (length,) = struct.unpack("<Q", header[4:])
    if tag != expect:
        raise ValueError("expected a %s frame, got %r" % (expect, tag))
    if length != len(buffer):
        raise ValueError("tensor frame of %d bytes, %d announced" % (length, len(buffer)))
    view = memoryview(buffer)
    done = 0
    while done < length:
        n = stdin.readinto(view[done:])
        if not n:
            raise EOFError()
        done += n
    return buffer


def read_message():
    """A message and its tensors; chunked tensors are left for the handler to stream."""
    message = json.loads(read_frame("JSON").decode("utf-8"))
    tensors = []
    for t in message.get("tensors", []):
        if t.get("chunked"):
            continue
        if message.get("type") == "run" and t["bytes"] >= REUSE_FROM:
            buffer = RUN_INPUTS.get(t["name"])
            if buffer is None or len(buffer) != t["bytes"]:
                buffer = bytearray(t["bytes"])
                RUN_INPUTS[t["name"]] = buffer
            tensors.append((t, read_frame_into("TENS", buffer)))
            continue
        data = read_frame("TENS")
        if len(data) != t["bytes"]:
            raise ValueError("tensor %s: %d bytes announced, %d sent" % (t["name"], t["bytes"], len(data)))
        tensors.append((t, data))
    return message, tensors


CHUNK = 4 << 20


def write_chunked(message, data):
    """A message announcing one chunked tensor, then its bytes in frames of CHUNK."""
    view = memoryview(data).cast("B")
    message = dict(message, tensors=[{"name": message.get("name", "payload"), "dtype": "U8", "shape": [len(view)], "bytes": len(view), "chunked": True}])
    body = json.dumps(message).encode("utf-8")
    stdout.write(b"JSON" + struct.pack("<Q", len(body)) + body)
    for start in range(0, len(view), CHUNK):
        part = view[start:start + CHUNK]
        stdout.write(b"TENS" + struct.pack("<Q", len(part)))
        stdout.write(part)
    stdout.flush()


def write_message(message, tensors=()):
    parts = []
    body = json.dumps(message).encode("utf-8")
    parts.append(b"JSON" + struct.pack("<Q", len(body)))
    parts.append(body)
    for data in tensors:
        parts.append(b"TENS" + struct.pack("<Q", len(data)))
        parts.append(data)
    # Small replies in one write (one pipe wakeup); large tensors without a joining copy.
    if sum(len(p) for p in parts) < (1 << 20):
        stdout.write(b"".join(parts))
    else:
        for p in parts:
            stdout.write(p)
    stdout.flush()


def error(id_, code, message, hint=None):
    reply = {"type": "error", "id": id_, "code": code, "message": message}
    if hint:
        reply["hint"] = hint
    write_message(reply)


# ------------------------------------------------------------- the SDK

popef = None
model_runtime = None
np = None

SDK_HINT = (
    "enable the Poplar SDK in the shell that runs popef (for example: source <poplar_sdk>/enable), "
    "so that python3 can import popef and model_runtime; set POPEF_PYTHON to choose the interpreter"
)


def import_sdk():
    global popef, model_runtime, np
    missing = []
    try:
        import numpy as _np
        np = _np
    except ImportError as e:
        missing.append("numpy (%s)" % e)
    try:
        import popef as _popef
        popef = _popef
    except ImportError as e:
        missing.append("popef (%s)" % e)
    try:
        import model_runtime as _mr
        model_runtime = _mr
    except ImportError as e:
        missing.append("model_runtime (%s)" % e)
    return missing


# Every SDK attribute the bridge uses: (module, dotted path, what needs it).
# "required" calls must be present for the bridge to work; "guarded" ones are
# feature-detected, with a fallback. SDK-API.md has one row per entry, with
# the evidence (a test keeps the two lists equal).
SDK_CALLS = [
    ("popef", "Reader", "required"),
    ("popef", "Reader.parseFile", "required"),
    ("popef", "Reader.metadata", "required"),
    ("popef", "Reader.executables", "required"),
    ("popef", "Reader.tensors", "required"),
    ("popef", "Reader.feeds", "required"),
    ("popef", "Reader.opaqueBlobs", "required"),
    ("popef", "Writer", "required"),
    ("popef", "Writer.createExecutable", "required"),
    ("popef", "Writer.createTensorData", "required"),
    ("popef", "Writer.createFeedData", "required"),
    ("popef", "Writer.createOpaqueBlob", "required"),
    ("popef", "Writer.writeMetadata", "required"),
    ("popef", "Writer.close", "required"),
    ("popef", "popefTypeToNumpyDType", "required"),
    ("popef", "DataType", "required"),
    ("popef", "TensorType", "required"),
    ("popef", "TensorInfo", "required"),
    ("popef", "TensorInfo.setDataType", "required"),
    ("popef", "TensorInfo.setShape", "required"),
    ("popef", "TensorInfo.dataType", "required"),
    ("popef", "TensorInfo.shape", "required"),
    ("popef", "TensorDataInfo", "required"),
    ("popef", "FeedDataInfo", "required"),
    ("popef", "Anchor", "required"),
    ("popef", "ProgramFlow", "required"),
    ("popef", "Option", "required"),
    ("popef", "Option.name", "required"),
    ("popef", "Option.value", "required"),
    ("popef", "Metadata", "required"),
    ("popef", "Metadata.anchors", "required"),
    ("popef", "Metadata.programsMap", "required"),
    ("popef", "Metadata.engineOptions", "required"),
    ("popef", "Metadata.deviceOptions", "required"),
    ("popef", "Metadata.programFlow", "required"),
    ("popef", "Metadata.setProgramFlow", "required"),
    ("popef", "Metadata.setReplicationFactor", "required"),
    ("popef", "Metadata.deviceIterations", "guarded"),
    ("popef", "Metadata.setDeviceIterations", "guarded"),
    ("popef", "__version__", "guarded"),
    ("model_runtime", "ModelRunner", "required"),
    ("model_runtime", "ModelRunner.getExecuteInputs", "required"),
    ("model_runtime", "ModelRunner.getExecuteOutputs", "required"),
    ("model_runtime", "ModelRunner.execute", "required"),
    ("model_runtime", "ModelRunnerConfig", "required"),
    ("model_runtime", "DeviceWaitConfig", "required"),
    ("model_runtime", "DeviceWaitStrategy", "required"),
    ("model_runtime", "DeviceWaitStrategy.WAIT_WITH_TIMEOUT", "required"),
    ("model_runtime", "InputMemoryView", "required"),
    ("model_runtime", "__version__", "guarded"),
]
# The rest of the C++-style accessors the bridge calls, set and get alike.
SDK_CALLS += [("popef", "Metadata." + name, "required") for field in (
    "Executable", "NumIpus", "IpuVersion", "IsPOD", "NumProcesses", "IsInference", "SeedHandle")
    for name in ("set" + field, field[0].lower() + field[1:])]
SDK_CALLS += [("popef", "Metadata.replicationFactor", "required")]
SDK_CALLS += [("popef", "Anchor." + name, "required") for field in (
    "Name", "Handle", "TensorInfo", "IsPerReplica", "Type", "Programs")
    for name in ("set" + field, field[0].lower() + field[1:])]
SDK_CALLS += [("popef", "ProgramFlow." + name, "required") for field in ("Load", "Main", "Save")
              for name in ("set" + field, field.lower())]
SDK_CALLS += [("popef", "TensorDataInfo." + name, "required") for name in ("setName", "setTensorInfo")]


def lookup(module, path):
    """The attribute at a dotted path of a module, or None when any step is missing."""
    value = module
    for part in path.split("."):
        if value is None or not hasattr(value, part):
            return None
        value = getattr(value, part)
    return value


def sdk_version():
    """The SDK release, from the modules' __version__ when they carry one."""
    for m in (popef, model_runtime):
        v = getattr(m, "__version__", None) if m is not None else None
        if isinstance(v, str) and v:
            return v
    return None


def missing_calls():
    """The required calls this SDK lacks, as 'module.path'."""
    modules = {"popef": popef, "model_runtime": model_runtime}
    return ["%s.%s" % (m, path) for (m, path, need) in SDK_CALLS if need == "required" and lookup(modules[m], path) is None]


def sdk_error(what):
    """An error naming the missing SDK attribute and the release found."""
    return UserError("E_SDK", "this Poplar SDK (%s) has no %s, which the bridge needs; see src/run/bridge/SDK-API.md"
                     % ("release " + sdk_version() if sdk_version() else "release unknown", what))


def text_of(value):
    """An Option's name or value: a method in the SDK's API (C++ name()/value()); an attribute tolerated."""
    return value() if callable(value) else value


def append_all(container, items, what):
    """Adds to a mutable list the SDK hands out; checks that it was not a copy."""
    before = len(container)
    for item in items:
        container.append(item)
    if len(container) != before + len(items):
        raise sdk_error("mutable %s (the list it returns is a copy)" % what)


def dtype_name(data_type):
    """The PopEF name of a popef.DataType value (pybind11 enums carry .name)."""
    name = getattr(data_type, "name", None)
    if name is None:
        name = str(data_type).split(".")[-1]
    return name


def tensor_info(info):
    ti = popef.TensorInfo()
    ti.setDataType(getattr(popef.DataType, info["dtype"]))
    ti.setShape(list(info["shape"]))
    return ti


def build_metadata(md):
    """A popef.Metadata from the JSON form of the open layout's metadata.
    Anchors and options are appended to the mutable lists the getters return
    (the SDK's API has no setAnchors); deviceIterations exists from SDK 3.3."""
    m = popef.Metadata()
    m.setExecutable(md["executable"])
    anchors = []
    for a in md["anchors"]:
        anchor = popef.Anchor()
        anchor.setName(a["name"])
        anchor.setHandle(a["handle"])
        anchor.setTensorInfo(tensor_info(a["tensorInfo"]))
        anchor.setIsPerReplica(a["isPerReplica"])
        anchor.setType(getattr(popef.TensorType, a["type"]))
        anchor.setPrograms(list(a["programs"]))
        anchors.append(anchor)
    append_all(m.anchors(), anchors, "Metadata.anchors()")
    flow = popef.ProgramFlow()
    flow.setLoad(list(md["programFlow"]["load"]))
    flow.setMain(list(md["programFlow"]["main"]))
    flow.setSave(list(md["programFlow"]["save"]))
    m.setProgramFlow(flow)
    programs = m.programsMap()
    for p in md["programsMap"]:
        programs[p["index"]] = p["name"]
    if len(m.programsMap()) != len({p["index"] for p in md["programsMap"]}):
        raise sdk_error("mutable Metadata.programsMap() (the map it returns is a copy)")
    m.setReplicationFactor(md["replicationFactor"])
    m.setNumIpus(md["numIpus"])
    m.setIpuVersion(md["ipuVersion"])
    m.setIsPOD(md["isPOD"])
    m.setNumProcesses(md["numProcesses"])
    m.setIsInference(md["isInference"])
    if hasattr(m, "setDeviceIterations"):
        m.setDeviceIterations(md["deviceIterations"])
    elif md["deviceIterations"] not in (0, 1):
        WARNINGS.append("this SDK (%s) has no Metadata.setDeviceIterations (SDK 3.3 and later): deviceIterations %d is not stored"
                        % ("release " + sdk_version() if sdk_version() else "release unknown", md["deviceIterations"]))
    m.setSeedHandle(md["seedHandle"])
    append_all(m.engineOptions(), [popef.Option(o["name"], o["value"]) for o in md["engineOptions"]], "Metadata.engineOptions()")
    append_all(m.deviceOptions(), [popef.Option(o["name"], o["value"]) for o in md["deviceOptions"]], "Metadata.deviceOptions()")
    return m


# Things the SDK could not store, reported to the host with the reply that caused them.
WARNINGS = []


def create_file(path):
    """popef.Writer(path) opens an existing file: Graphcore's own rewriting script creates it first."""
    with open(path, "wb"):
        pass


class Session:
    def __init__(self, message, tensors):
        self.dir = tempfile.mkdtemp(prefix="popef-ipu-bridge-")
        self.path = os.path.join(self.dir, "executable.popef")
        OPEN_SESSIONS.append(self)
        try:
            self.load(message, tensors)
        except BaseException:
            self.close()
            raise

    def load(self, message, tensors):
        model = message["model"]
        payloads = [data for (_, data) in tensors]
        create_file(self.path)
        writer = popef.Writer(self.path)
        for blob in model["blobs"]:
            if blob["kind"] == "feed":
                # Feeds are datasets, not needed to run the model.
                continue
            data = payloads[blob["tensor"]]
            w = create_blob_writer(writer, blob)
            w.write(data, len(data))
            w.close()
        writer.writeMetadata(build_metadata(model["metadata"]))
        writer.close()

        config = model_runtime.ModelRunnerConfig()
        wait_seconds = float(message.get("options", {}).get("device_wait_seconds", "60"))
        # Durations as datetime.timedelta keywords, as public callers pass them.
        config.device_wait_config = model_runtime.DeviceWaitConfig(
            model_runtime.DeviceWaitStrategy.WAIT_WITH_TIMEOUT,
            timeout=datetime.timedelta(seconds=wait_seconds),
            sleepTime=datetime.timedelta(seconds=1),
        )
        self.runner = model_runtime.ModelRunner(self.path, config=config)
        self.inputs = [self.spec(d) for d in self.runner.getExecuteInputs()]
        self.outputs = [self.spec(d) for d in self.runner.getExecuteOutputs()]

    @staticmethod
    def spec(descriptor):
        return {"name": descriptor.name, "dtype": dtype_name(descriptor.data_type), "shape": [int(d) for d in descriptor.shape],
                "numpy": popef.popefTypeToNumpyDType(descriptor.data_type)}

    @staticmethod
    def public(spec):
        return {k: v for (k, v) in spec.items() if k != "numpy"}

    def run(self, tensors):
        expected = {s["name"]: s for s in self.inputs}
        view = model_runtime.InputMemoryView()
        fed = set()
        for (t, data) in tensors:
            spec = expected.get(t["name"])
            if spec is None:
                raise UserError("E_INPUT", "unexpected input %r; the model takes %s" % (t["name"], sorted(expected)))
            if t["dtype"] != spec["dtype"] or list(t["shape"]) != spec["shape"]:
                raise UserError(
                    "E_INPUT",
                    "input %r is %s %s, the model expects %s %s" % (t["name"], t["dtype"], t["shape"], spec["dtype"], spec["shape"]),
                )
            view[t["name"]] = np.frombuffer(data, dtype=spec["numpy"]).reshape(spec["shape"])
            fed.add(t["name"])
        missing = sorted(set(expected) - fed)
        if missing:
            raise UserError("E_INPUT", "missing inputs: %s" % missing)
        results = self.runner.execute(view)
        out = []
        for spec in self.outputs:
            # Each output is a buffer of raw bytes: read it as such, never cast its values.
            raw = memoryview(results[spec["name"]]).cast("B")
            size = spec["numpy"].itemsize
            for d in spec["shape"]:
                size *= d
            if len(raw) != size:
                raise UserError("E_SDK", "the runtime returned %d bytes for output %r, which is %s %s (%d bytes)"
                                % (len(raw), spec["name"], spec["dtype"], spec["shape"], size))
            # Sent as it is: a copy of a large output would cost as much as the pipe.
            out.append(({"name": spec["name"], "dtype": spec["dtype"], "shape": list(spec["shape"])}, raw))
        return out

    def close(self):
        self.runner = None
        if self in OPEN_SESSIONS:
            OPEN_SESSIONS.remove(self)
        shutil.rmtree(self.dir, ignore_errors=True)


def info_json(ti):
    return {"dtype": dtype_name(ti.dataType()), "shape": [int(d) for d in ti.shape()]}


def element_size(dtype):
    return {"BOOL": 1, "F8": 1, "F8143": 1, "F8152": 1, "F16": 2, "F32": 4, "F64": 8, "S8": 1, "U8": 1, "S16": 2,
            "U16": 2, "S32": 4, "U32": 4, "S64": 8, "U64": 8}[dtype]


def metadata_json(md):
    """The open layout's JSON form of a popef.Metadata (schemas/manifest.schema.json)."""
    flow = md.programFlow()
    return {
        "executable": md.executable(),
        "anchors": [{
            "name": a.name(), "handle": a.handle(), "tensorInfo": info_json(a.tensorInfo()),
            "isPerReplica": bool(a.isPerReplica()), "type": dtype_name(a.type()), "programs": [int(p) for p in a.programs()],
        } for a in md.anchors()],
        "programFlow": {"load": [int(p) for p in flow.load()], "main": [int(p) for p in flow.main()], "save": [int(p) for p in flow.save()]},
        "programsMap": [{"index": int(k), "name": v} for (k, v) in dict(md.programsMap() or {}).items()],
        "replicationFactor": int(md.replicationFactor() or 0), "numIpus": int(md.numIpus() or 0), "ipuVersion": int(md.ipuVersion() or 0),
        "isPOD": bool(md.isPOD()), "numProcesses": int(md.numProcesses() or 0), "isInference": bool(md.isInference()),
        # Before SDK 3.3 the metadata has no deviceIterations: one iteration per run.
        "deviceIterations": int(md.deviceIterations() or 0) if hasattr(md, "deviceIterations") else 1,
        "seedHandle": md.seedHandle() or "",
        "engineOptions": [{"name": text_of(o.name), "value": text_of(o.value)} for o in (md.engineOptions() or [])],
        "deviceOptions": [{"name": text_of(o.name), "value": text_of(o.value)} for o in (md.deviceOptions() or [])],
    }


def payload_bytes(data):
    """Payload bytes of whatever the SDK returns (bytes, numpy arrays, buffers)."""
    if np is not None and isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).view(np.uint8).reshape(-1)
    return data


def do_import(id_, message):
    """Reads SDK-written files with popef.Reader and streams every blob to the host, one message per blob."""
    reader = popef.Reader()
    for path in message["files"]:
        try:
            reader.parseFile(path)
        except Exception as e:
            raise UserError("E_SDK_READ", "the SDK's popef.Reader cannot read %s: %s: %s" % (path, type(e).__name__, e))
    for e in reader.executables():
        write_chunked({"type": "blob", "id": id_, "kind": "executable", "name": e.name}, payload_bytes(e.executable()))
    for md in reader.metadata():
        write_message({"type": "blob", "id": id_, "kind": "metadata", "metadata": metadata_json(md)})
    for t in reader.tensors():
        write_chunked({"type": "blob", "id": id_, "kind": "tensor", "name": t.info.name(), "tensorInfo": info_json(t.info.tensorInfo())}, payload_bytes(t.data()))
    for f in reader.feeds():
        info = info_json(f.info.tensorInfo())
        data = payload_bytes(f.data())
        sample = element_size(info["dtype"])
        for d in info["shape"]:
            sample *= d
        count = len(memoryview(data).cast("B")) // sample if sample else 0
        write_chunked({"type": "blob", "id": id_, "kind": "feed", "name": f.info.name(), "tensorInfo": info, "sampleCount": count}, data)
    for o in reader.opaqueBlobs():
        write_chunked({"type": "blob", "id": id_, "kind": "opaque", "name": o.name, "executable": o.executable}, payload_bytes(o.data()))
    write_message({"type": "imported", "id": id_})


def create_blob_writer(writer, blob, compress=False):
    """The SDK's writer for one blob the host describes (kind, name, tensorInfo, executable)."""
    kind = blob["kind"]
    if kind == "executable":
        return writer.createExecutable(blob["name"], compress)
    if kind == "opaque":
        return writer.createOpaqueBlob(blob["name"], blob["executable"])
    info = popef.FeedDataInfo() if kind == "feed" else popef.TensorDataInfo()
    info.setName(blob["name"])
    info.setTensorInfo(tensor_info(blob["tensorInfo"]))
    return writer.createFeedData(info) if kind == "feed" else writer.createTensorData(info)


def do_export(id_, message):
    """Writes the host's model with the SDK's popef.Writer, streaming each payload into its blob writer."""
    # One lazy chunk stream per announced payload, read in announcement order.
    streams = [read_chunks(a) for a in message.get("tensors", [])]
    try:
        create_file(message["path"])
        writer = popef.Writer(message["path"])
        compress = bool(message.get("compress", False))
        for blob in message["model"]["blobs"]:
            w = create_blob_writer(writer, blob, compress)
            for chunk in streams[blob["tensor"]]:
                w.write(chunk, len(chunk))
            w.close()
        for md in message["model"]["metadata"]:
            writer.writeMetadata(build_metadata(md))
        writer.close()
    except Exception:
        # Keep the stream in step: read what the host still sends (the rest
        # of a stream part-read, and those not started), then report.
        for stream in streams:
            for _ in stream:
                pass
        raise
    reply = {"type": "exported", "id": id_}
    if WARNINGS:
        reply["warnings"] = list(WARNINGS)
        del WARNINGS[:]
    write_message(reply)


OS_HINTS = {
    "EROFS": "choose a writable destination",
    "ENOSPC": "free some disk space and try again",
    "EACCES": "check the file permissions",
    "EPERM": "check the file permissions",
    "ENOENT": "check the path",
}


def os_error_message(e):
    """PATH: the file system refused it: EROFS (Read-only file system); PATH is the file the user asked for, not our temporary sibling."""
    name = e.filename or ""
    base = os.path.basename(name)
    if base.startswith(".") and ".popef-tmp-" in base:
        name = os.path.join(os.path.dirname(name), base[1:base.index(".popef-tmp-")])
    code = errno.errorcode.get(e.errno or 0, "error")
    return "%s: the file system refused it: %s (%s)" % (name, code, e.strerror or e)


class UserError(Exception):
    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code = code


def doctor_report():
    """What this interpreter and SDK offer the bridge, call by call (popef doctor)."""
    if popef is None and model_runtime is None and np is None:
        import_sdk()
    modules = {"popef": popef, "model_runtime": model_runtime}
    imports = {}
    for name in ("numpy", "popef", "model_runtime"):
        try:
            module = __import__(name)
            imports[name] = {"ok": True, "file": getattr(module, "__file__", None) or ""}
        except ImportError as e:
            imports[name] = {"ok": False, "error": str(e)}
    calls = []
    for (m, path, need) in SDK_CALLS:
        present = modules[m] is not None and lookup(modules[m], path) is not None
        calls.append({"module": m, "call": path, "need": need, "present": present})
    return {
        "python": {"executable": sys.executable, "version": platform.python_version()},
        "imports": imports,
        "sdkVersion": sdk_version(),
        "calls": calls,
    }


def stop_on_signal(signum, _frame):
    # The host stops the bridge with SIGTERM (Ctrl-C reaches it the same way) and
    # SIGKILLs it soon after: remove the sessions' copies of the model first, then
    # leave at once, without the interpreter's slow teardown of the SDK.
    for s in list(OPEN_SESSIONS):
        shutil.rmtree(s.dir, ignore_errors=True)
    os._exit(128 + signum)


def main():
    signal.signal(signal.SIGTERM, stop_on_signal)
    signal.signal(signal.SIGINT, stop_on_signal)
    widen_pipes()
    try:
        serve()
    finally:
        for s in OPEN_SESSIONS:
            s.close()


# Sessions whose temporary copy of the model still exists.
OPEN_SESSIONS = []


def serve():
    session = None
    available = False
    while True:
        try:
            message, tensors = read_message()
        except EOFError:
            break
        id_ = message.get("id", -1)
        kind = message.get("type")
        try:
            if kind == "hello":
                missing = import_sdk()
                available = not missing
                reply = {"type": "hello", "id": id_, "protocol": PROTOCOL, "plugin": "ipu", "version": BRIDGE_VERSION, "available": available}
                if missing:
                    reply["reason"] = "the Poplar SDK's Python modules cannot be imported: " + "; ".join(missing)
                    reply["hint"] = SDK_HINT
                write_message(reply)
            elif kind == "doctor":
                write_message(dict(doctor_report(), type="doctor", id=id_))
            elif kind == "open":
                if not available:
                    error(id_, "E_SDK", "the Poplar SDK is not available", SDK_HINT)
                    continue
                gaps = missing_calls()
                if gaps:
                    raise sdk_error(", ".join(gaps))
                if session is not None:
                    session.close()
                session = Session(message, tensors)
                write_message({"type": "opened", "id": id_, "inputs": [Session.public(x) for x in session.inputs],
                               "outputs": [Session.public(x) for x in session.outputs]})
            elif kind == "run":
                if session is None:
                    error(id_, "E_STATE", "run before open")
                    continue
                results = session.run(tensors)
                write_message({"type": "result", "id": id_, "tensors": [dict(spec, bytes=len(data)) for (spec, data) in results]}, [data for (_, data) in results])
            elif kind == "import":
                if not available:
                    error(id_, "E_SDK", "the Poplar SDK is not available", SDK_HINT)
                    continue
                do_import(id_, message)
            elif kind == "export":
                if not available:
                    # The payload frames still have to be consumed to keep the stream in step.
                    for a in message.get("tensors", []):
                        for _ in read_chunks(a):
                            pass
                    error(id_, "E_SDK", "the Poplar SDK is not available", SDK_HINT)
                    continue
                do_export(id_, message)
            elif kind == "close":
                if session is not None:
                    session.close()
                write_message({"type": "closed", "id": id_})
                break
            else:
                error(id_, "E_PROTOCOL", "unknown request %r" % kind)
        except UserError as e:
            error(id_, e.code, str(e))
        except OSError as e:
            # A file the bridge reads or writes (a read-only or full disk): the OS's reason, not an SDK trace.
            error(id_, "E_IO", os_error_message(e), OS_HINTS.get(errno.errorcode.get(e.errno or 0, ""), "check the path and its file system"))
        except Exception as e:  # the SDK's own errors: its message, and the trace on stderr
            log(traceback.format_exc())
            error(id_, "E_SDK", "%s: %s" % (type(e).__name__, e), "see the Model Runtime / Poplar messages above")


if __name__ == "__main__":
    main()
