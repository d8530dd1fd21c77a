"""The MNIST graph in Triton's Python backend, for the side-by-side
benchmark of popef serve against the real Triton server: the same ONNX
graph and weights the cpu plugin runs (taken from the PopEF file by
test/bench/serve.ts), on onnxruntime."""
import json
import os
import sys

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        here = os.path.join(args["model_repository"], args["model_version"])
        with open(os.path.join(here, "graph.json")) as f:
            graph = json.load(f)
        # The stub's interpreter does not see the virtual environment by itself.
        sys.path.insert(0, graph["site_packages"])
        global np, ort
        import numpy as np
        import onnxruntime as ort

        self.session = ort.InferenceSession(os.path.join(here, "model.onnx"))
        self.input = graph["input"]
        self.output = graph["output"]
        self.weights = {name: np.load(os.path.join(here, file)) for name, file in graph["weights"].items()}
        # With dynamic batching the requests of one execution are joined along the batch dimension and
        # run in pieces of the graph's own (fixed) batch size, as popef serve runs a batch on the cpu plugin.
        self.batching = graph.get("batching", False)
        rows = self.session.get_inputs()[0].shape[0]
        self.rows = rows if isinstance(rows, int) and rows > 0 else None

    def execute(self, requests):
        if self.batching:
            return self.execute_batch(requests)
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "digit_image").as_numpy()
            y = self.session.run([self.output], {self.input: x, **self.weights})[0]
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("output_labels", y.astype(np.float32))]))
        return responses

    def execute_batch(self, requests):
        xs = [pb_utils.get_input_tensor_by_name(r, "digit_image").as_numpy() for r in requests]
        x = np.concatenate(xs)
        step = self.rows or len(x)
        pad = (-len(x)) % step
        if pad:
            x = np.concatenate([x, np.zeros((pad,) + x.shape[1:], x.dtype)])
        y = np.concatenate([self.session.run([self.output], {self.input: x[i : i + step], **self.weights})[0] for i in range(0, len(x), step)])
        responses = []
        at = 0
        for part in xs:
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("output_labels", y[at : at + len(part)].astype(np.float32))]))
            at += len(part)
        return responses
