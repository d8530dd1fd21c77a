"""One opened model: rebuilt in the SDK's own encoding with popef.Writer,
loaded with model_runtime.ModelRunner, run on request."""

import datetime
import os
import shutil
import tempfile

from .convert import create_blob_writer, create_file
from .errors import UserError
from .metadata import build_metadata, dtype_name


class Session:
    def __init__(self, sdk, message, tensors, warnings):
        self.sdk = sdk
        self.runner = None
        self.dir = tempfile.mkdtemp(prefix="popef-ipu-bridge-")
        self.path = os.path.join(self.dir, "executable.popef")
        try:
            self.load(message, tensors, warnings)
        except BaseException:
            self.close()
            raise

    def load(self, message, tensors, warnings):
        popef, model_runtime = self.sdk.popef, self.sdk.model_runtime
        model = message["model"]
        payloads = [data for (_, data) in tensors]
        create_file(self.path)
        writer = popef.Writer(self.path)
        for blob in model["blobs"]:
            if blob["kind"] == "feed":
                # Feeds are datasets, not needed to run the model.
                continue
            data = payloads[blob["tensor"]]
            w = create_blob_writer(self.sdk, writer, blob)
            w.write(data, len(data))
            w.close()
        writer.writeMetadata(build_metadata(self.sdk, model["metadata"], warnings))
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

    def spec(self, descriptor):
        return {"name": descriptor.name, "dtype": dtype_name(descriptor.data_type), "shape": [int(d) for d in descriptor.shape],
                "numpy": self.sdk.popef.popefTypeToNumpyDType(descriptor.data_type)}

    @staticmethod
    def public(spec):
        return {k: v for (k, v) in spec.items() if k != "numpy"}

    def run(self, tensors):
        np = self.sdk.np
        expected = {s["name"]: s for s in self.inputs}
        view = self.sdk.model_runtime.InputMemoryView()
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

    def remove_files(self):
        """Only the temporary copy of the model: safe from a signal handler."""
        shutil.rmtree(self.dir, ignore_errors=True)

    def close(self):
        self.runner = None
        self.remove_files()
