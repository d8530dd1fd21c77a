"""Sends gRPC requests that tritonclient's InferenceServerClient will not
build (it refuses 'triton_' parameter keys, and always sets a value), with
tritonclient's generated stubs, and prints, per case, the status code and
message of the answer, or "OK". The test runs it against popef serve and a
real Triton server and compares. perf_analyzer sends
triton_enable_empty_final_response (a bool) on every ModelInfer.

usage: grpc_raw_cases.py GRPC_URL MODEL
"""
import json
import sys

import grpc
import numpy as np
from tritonclient.grpc import service_pb2, service_pb2_grpc


def infer_request(model, parameters):
    request = service_pb2.ModelInferRequest(model_name=model)
    tensor = request.inputs.add(name="digit_image", datatype="FP32", shape=[1, 1, 28, 28])
    del tensor
    request.raw_input_contents.append(np.zeros((1, 1, 28, 28), np.float32).tobytes())
    for key, (kind, value) in parameters.items():
        if kind is not None:
            setattr(request.parameters[key], kind, value)
        else:
            request.parameters[key].Clear()
    return request


def cases():
    """name -> {key: (InferParameter field or None for no value, value)}"""
    return {
        "empty-final-response-true": {"triton_enable_empty_final_response": ("bool_param", True)},
        "empty-final-response-false": {"triton_enable_empty_final_response": ("bool_param", False)},
        "empty-final-response-int": {"triton_enable_empty_final_response": ("int64_param", 1)},
        "reserved-key": {"triton_other": ("bool_param", True)},
        "sequence-id-bool": {"sequence_id": ("bool_param", True)},
        "sequence-start-int": {"sequence_start": ("int64_param", 1)},
        "priority-negative": {"priority": ("int64_param", -1)},
        "priority-string": {"priority": ("string_param", "high")},
        "timeout-uint": {"timeout": ("uint64_param", 5)},
        "custom-double": {"my_key": ("double_param", 0.5)},
        "custom-no-value": {"my_key": (None, None)},
    }


def main():
    url, model = sys.argv[1:3]
    stub = service_pb2_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(url))
    out = {}
    for name, parameters in cases().items():
        try:
            stub.ModelInfer(infer_request(model, parameters), timeout=30)
            out[name] = "OK"
        except grpc.RpcError as e:
            out[name] = f"{e.code().name}: {e.details()}"
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
