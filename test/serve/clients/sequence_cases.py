"""Sends sequences of requests with the real tritonclient (gRPC and HTTP)
and prints, per step, what the server answered: the status and message of
an error, or ok. The test runs it against popef serve and a real Triton
server on the same sequence model and compares.

usage: sequence_cases.py GRPC_URL HTTP_URL MODEL
"""
import json
import sys

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException


def steps(base):
    """[(step name, sequence parameters)]; ids offset by `base` so that each transport has its own sequences."""
    return [
        ("no-id", {}),
        ("zero-id", {"sequence_id": 0, "sequence_start": True}),
        ("not-started", {"sequence_id": base + 1}),
        ("start", {"sequence_id": base + 2, "sequence_start": True}),
        ("continue", {"sequence_id": base + 2}),
        ("end", {"sequence_id": base + 2, "sequence_end": True}),
        ("after-end", {"sequence_id": base + 2}),
        ("string-start", {"sequence_id": f"s{base}", "sequence_start": True}),
        ("string-as-number", {"sequence_id": base + 3}),
        ("string-end", {"sequence_id": f"s{base}", "sequence_end": True}),
        ("start-and-end", {"sequence_id": base + 4, "sequence_start": True, "sequence_end": True}),
    ]


def run(module, url, model, parameters):
    client = module.InferenceServerClient(url=url)
    image = module.InferInput("digit_image", [1, 1, 28, 28], "FP32")
    image.set_data_from_numpy(np.full((1, 1, 28, 28), 0.5, dtype=np.float32))
    try:
        client.infer(model, [image], **parameters)
        return {"ok": True}
    except InferenceServerException as e:
        return {"ok": False, "status": str(e.status()), "message": e.message()}


def main():
    grpc_url, http_url, model = sys.argv[1:4]
    out = {}
    for transport, module, url, base in (("grpc", grpcclient, grpc_url, 1000), ("http", httpclient, http_url, 2000)):
        for name, parameters in steps(base):
            out[f"{transport}/{name}"] = run(module, url, model, parameters)
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
