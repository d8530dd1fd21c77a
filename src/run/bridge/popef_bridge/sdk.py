"""The Poplar SDK as the bridge sees it: its Python modules, imported when
the host says hello; SDK_CALLS, every call the bridge makes with what needs
it (SDK-API.md beside ipu_bridge.py has one row per entry, with the
evidence; a test keeps the two equal); and what `popef doctor` reports."""

import platform
import sys

from .errors import UserError

SDK_HINT = (
    "enable the Poplar SDK in the shell that runs popef (for example: source <poplar_sdk>/enable), "
    "so that python3 can import popef and model_runtime; set POPEF_PYTHON to choose the interpreter"
)

# The operations `popef doctor` reports on. "read" is reading a file's
# metadata and blob list (dump, config, validate ... of an SDK-written file),
# "import" that plus every payload; "run" rewrites the model with the SDK's
# writer and runs it; "export" writes a file with the SDK's writer.
OPERATIONS = ("read", "run", "import", "export")

# Blob kinds whose calls an operation makes only when the model has them.
KINDS = ("tensor", "feed", "opaque")

READ = ("read", "import")
WRITE = ("run", "export")
ALL = OPERATIONS

# Every SDK attribute the bridge uses: (module, dotted path, need, uses).
#
# need: "required", the Python spelling is shown by public code and the
# operations in `uses` check it before they start; "inferred", the Python
# spelling is taken from the C++ API (no public Python code shows it),
# checked the same way (unless it has a fallback, WITH_FALLBACK) but
# reported by doctor as unverified when absent; "guarded", feature-detected
# where it is used, with a fallback.
#
# uses: the operations that make the call; "export:feed" means export makes
# it only for a model with feed blobs.
SDK_CALLS = [
    ("popef", "Reader", "required", READ),
    ("popef", "Reader.parseFile", "required", READ),
    ("popef", "Reader.metadata", "required", READ),
    ("popef", "Reader.executables", "required", READ),
    ("popef", "Reader.tensors", "required", READ),
    ("popef", "Reader.feeds", "required", READ),
    ("popef", "Reader.opaqueBlobs", "required", READ),
    ("popef", "Writer", "required", WRITE),
    ("popef", "Writer.createExecutable", "required", WRITE),
    ("popef", "Writer.createTensorData", "required", ("run:tensor", "export:tensor")),
    ("popef", "Writer.createFeedData", "required", ("export:feed",)),
    ("popef", "Writer.createOpaqueBlob", "required", ("run:opaque", "export:opaque")),
    ("popef", "Writer.writeMetadata", "required", WRITE),
    ("popef", "Writer.close", "required", WRITE),
    ("popef", "popefTypeToNumpyDType", "required", ("run",)),
    ("popef", "DataType", "required", WRITE),
    ("popef", "TensorType", "required", WRITE),
    ("popef", "TensorInfo", "required", WRITE),
    ("popef", "TensorInfo.setDataType", "inferred", WRITE),
    ("popef", "TensorInfo.setShape", "inferred", WRITE),
    ("popef", "TensorInfo.dataType", "inferred", READ),
    ("popef", "TensorInfo.shape", "inferred", READ),
    ("popef", "TensorDataInfo", "required", ("run:tensor", "export:tensor")),
    ("popef", "FeedDataInfo", "inferred", ("export:feed",)),
    ("popef", "Anchor", "inferred", WRITE),
    ("popef", "ProgramFlow", "inferred", WRITE),
    ("popef", "Option", "inferred", WRITE),
    ("popef", "Option.name", "inferred", READ),
    ("popef", "Option.value", "inferred", READ),
    ("popef", "Metadata", "required", WRITE),
    ("popef", "Metadata.anchors", "required", ALL),
    ("popef", "Metadata.programsMap", "required", ALL),
    ("popef", "Metadata.engineOptions", "required", ALL),
    ("popef", "Metadata.deviceOptions", "required", ALL),
    ("popef", "Metadata.programFlow", "inferred", READ),
    ("popef", "Metadata.setProgramFlow", "inferred", WRITE),
    ("popef", "Metadata.setReplicationFactor", "inferred", WRITE),
    ("popef", "Metadata.deviceIterations", "guarded", READ),
    ("popef", "Metadata.setDeviceIterations", "guarded", WRITE),
    ("popef", "__version__", "guarded", ALL),
    ("model_runtime", "ModelRunner", "required", ("run",)),
    ("model_runtime", "ModelRunner.getExecuteInputs", "required", ("run",)),
    ("model_runtime", "ModelRunner.getExecuteOutputs", "required", ("run",)),
    ("model_runtime", "ModelRunner.execute", "required", ("run",)),
    ("model_runtime", "ModelRunnerConfig", "required", ("run",)),
    ("model_runtime", "DeviceWaitConfig", "required", ("run",)),
    ("model_runtime", "DeviceWaitStrategy", "required", ("run",)),
    ("model_runtime", "DeviceWaitStrategy.WAIT_WITH_TIMEOUT", "required", ("run",)),
    ("model_runtime", "InputMemoryView", "required", ("run",)),
    ("model_runtime", "__version__", "guarded", ALL),
]
# Scalar metadata fields: setters written, getters read, all inferred from
# C++. The three of GUARDED_FIELDS have a fallback (their value is the
# default in nearly every model: a missing setter leaves the SDK's default,
# with a warning when the model's value differs; a missing getter reads the
# default, with a warning), so that a binding that spells them otherwise
# costs a warning, not the operation.
FIELDS = ("Executable", "NumIpus", "IpuVersion", "IsPOD", "NumProcesses", "IsInference", "SeedHandle")
GUARDED_FIELDS = {"IsPOD": False, "NumProcesses": 1, "SeedHandle": ""}
WITH_FALLBACK = set()
for _field in FIELDS:
    for _path, _uses in (("Metadata.set" + _field, WRITE), ("Metadata." + _field[0].lower() + _field[1:], READ)):
        SDK_CALLS.append(("popef", _path, "inferred", _uses))
        if _field in GUARDED_FIELDS:
            WITH_FALLBACK.add(_path)
SDK_CALLS += [("popef", "Metadata.replicationFactor", "inferred", READ)]
for _field in ("Name", "Handle", "TensorInfo", "IsPerReplica", "Type", "Programs"):
    SDK_CALLS.append(("popef", "Anchor.set" + _field, "inferred", WRITE))
    SDK_CALLS.append(("popef", "Anchor." + _field[0].lower() + _field[1:], "inferred", READ))
for _field in ("Load", "Main", "Save"):
    SDK_CALLS.append(("popef", "ProgramFlow.set" + _field, "inferred", WRITE))
    SDK_CALLS.append(("popef", "ProgramFlow." + _field.lower(), "inferred", READ))
SDK_CALLS += [("popef", "TensorDataInfo." + name, "inferred", ("run:tensor", "export:tensor")) for name in ("setName", "setTensorInfo")]
SDK_CALLS += [("popef", "FeedDataInfo." + name, "inferred", ("export:feed",)) for name in ("setName", "setTensorInfo")]


def lookup(module, path):
    """The attribute at a dotted path of a module, or None when any step is missing."""
    value = module
    for part in path.split("."):
        if value is None or not hasattr(value, part):
            return None
        value = getattr(value, part)
    return value


def uses_call(uses, operation, kinds):
    """Whether an entry's `uses` includes `operation` for a model with these blob kinds."""
    return any(u == operation or (u.startswith(operation + ":") and u.split(":", 1)[1] in kinds) for u in uses)


class Sdk:
    """The SDK's modules, once imported, and the checks made against them."""

    def __init__(self):
        self.popef = None
        self.model_runtime = None
        self.np = None
        self.imported = False

    def load(self):
        """Imports numpy and the SDK's modules; returns what failed to import."""
        self.imported = True
        missing = []
        try:
            import numpy
            self.np = numpy
        except ImportError as e:
            missing.append("numpy (%s)" % e)
        try:
            import popef
            self.popef = popef
        except ImportError as e:
            missing.append("popef (%s)" % e)
        try:
            import model_runtime
            self.model_runtime = model_runtime
        except ImportError as e:
            missing.append("model_runtime (%s)" % e)
        return missing

    def modules(self):
        return {"popef": self.popef, "model_runtime": self.model_runtime}

    def has(self, path):
        """Whether popef has the attribute at a dotted path."""
        return lookup(self.popef, path) is not None

    def version(self):
        """The SDK release, from the modules' __version__ when they carry one."""
        for m in (self.popef, self.model_runtime):
            v = getattr(m, "__version__", None) if m is not None else None
            if isinstance(v, str) and v:
                return v
        return None

    def release(self):
        v = self.version()
        return "release " + v if v else "release unknown"

    def absent(self, operation, kinds=KINDS):
        """The calls (required or inferred, not guarded) that `operation` makes for a model with these blob kinds and this SDK lacks."""
        modules = self.modules()
        return [(m, path, need) for (m, path, need, uses) in SDK_CALLS
                if need != "guarded" and path not in WITH_FALLBACK and uses_call(uses, operation, kinds) and lookup(modules[m], path) is None]

    def require(self, operation, kinds=KINDS):
        """Stops `operation` before it starts when this SDK lacks a call it makes for the model at hand."""
        gaps = self.absent(operation, kinds)
        if gaps:
            names = ", ".join("%s.%s%s" % (m, path, " (inferred from the C++ API: its Python spelling is unverified)" if need == "inferred" else "")
                              for (m, path, need) in gaps)
            raise self.error(names)

    def error(self, what):
        """An error naming the missing SDK attribute and the release found."""
        return UserError("E_SDK", "this Poplar SDK (%s) has no %s, which the bridge needs for this; see src/run/bridge/SDK-API.md"
                         % (self.release(), what))

    def doctor_report(self):
        """What this interpreter and SDK offer the bridge, call by call and operation by operation (popef doctor)."""
        if not self.imported:
            self.load()
        modules = self.modules()
        imports = {}
        for name in ("numpy", "popef", "model_runtime"):
            try:
                module = __import__(name)
                imports[name] = {"ok": True, "file": getattr(module, "__file__", None) or ""}
            except ImportError as e:
                imports[name] = {"ok": False, "error": str(e)}
        calls = []
        for (m, path, need, uses) in SDK_CALLS:
            present = modules[m] is not None and lookup(modules[m], path) is not None
            fallback = need == "guarded" or path in WITH_FALLBACK
            calls.append({"module": m, "call": path, "need": need, "present": present, "uses": list(uses), "fallback": fallback})
        # Each operation for a model without feed blobs (the common case) and
        # for one with every kind of blob.
        operations = []
        for op in OPERATIONS:
            operations.append({
                "operation": op,
                "withoutFeeds": ["%s.%s" % (m, p) for (m, p, _) in self.absent(op, ("tensor", "opaque"))],
                "anyModel": ["%s.%s" % (m, p) for (m, p, _) in self.absent(op, KINDS)],
            })
        return {
            "python": {"executable": sys.executable, "version": platform.python_version()},
            "imports": imports,
            "sdkVersion": self.version(),
            "calls": calls,
            "operations": operations,
        }
