"""A `model_runtime` that costs nothing, for timing the IPU bridge's pipe
(test/bench/protocol.ts): the simulated SDK's surface (fixtures/sim-sdk,
whose popef this imports), but execute() ignores its inputs and hands back
preallocated zero buffers. Not a runtime for any real use."""
import importlib.util
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_sim = os.path.join(_here, "..", "..", "..", "fixtures", "sim-sdk", "model_runtime.py")
_spec = importlib.util.spec_from_file_location("_sim_model_runtime", _sim)
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)

for _name in ("DeviceWaitStrategy", "DeviceWaitConfig", "ModelRunnerConfig", "InputMemoryView", "TensorDescriptor", "__version__"):
    globals()[_name] = getattr(_base, _name)


class ModelRunner(_base.ModelRunner):
    __slots__ = ("_zeros",)

    def __init__(self, path, config=None):
        _base.ModelRunner.__init__(self, path, config)
        self._zeros = {d.name: memoryview(bytearray(d.size_in_bytes)) for d in self._outputs}

    def execute(self, inputs):
        if not isinstance(inputs, InputMemoryView):
            raise TypeError("execute(): incompatible function arguments")
        return dict(self._zeros)
