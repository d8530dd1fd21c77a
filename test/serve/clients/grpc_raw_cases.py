"""Sends gRPC requests that tritonclient's InferenceServerClient will not
build (it refuses 'triton_' parameter keys, and always sets a value), with
tritonclient's generated stubs, and prints, per case, the status code and
message of the answer, or "OK". The test runs it against popef serve and a
real Triton server and compares. perf_analyzer sends
triton_enable_empty_final_response (a bool) on every ModelInfer. Then
shapes and versions at the ends of int64 (exactly printed, the batch size
truncated to uint32 as Triton does), and shared-memory parameters of the
wrong kind or naming no registered region, on inputs and outputs.

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


INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
IMAGE_BYTES = np.zeros((1, 1, 28, 28), np.float32).tobytes()


def shaped(model, shape, raw=IMAGE_BYTES, version=""):
    request = service_pb2.ModelInferRequest(model_name=model, model_version=version)
    request.inputs.add(name="digit_image", datatype="FP32", shape=shape)
    request.raw_input_contents.append(raw)
    return request


def shm_request(model, input_parameters=None, output_parameters=None, contents=False):
    request = service_pb2.ModelInferRequest(model_name=model)
    tensor = request.inputs.add(name="digit_image", datatype="FP32", shape=[1, 1, 28, 28])
    for key, (kind, value) in (input_parameters or {}).items():
        setattr(tensor.parameters[key], kind, value)
    if contents:
        tensor.contents.fp32_contents.extend([0.0] * 784)
    elif input_parameters is None:
        request.raw_input_contents.append(IMAGE_BYTES)
    if output_parameters is not None:
        output = request.outputs.add(name="output_labels")
        for key, (kind, value) in output_parameters.items():
            setattr(output.parameters[key], kind, value)
    return request


def request_cases(model):
    """name -> (stub method name, request)"""
    region = {"shared_memory_region": ("string_param", "nosuch"), "shared_memory_byte_size": ("int64_param", 3136)}
    return {
        # -2^63 is a batch of 0, sized as one row; with a row's bytes Triton hands it to its backend, which
        # popef serve refuses (README), so this one brings none and gets the byte-size message from both.
        "shape-int64-min-batch": ("ModelInfer", shaped(model, [INT64_MIN, 1, 28, 28], raw=b"")),
        "shape-int64-min-plus-one-batch": ("ModelInfer", shaped(model, [INT64_MIN + 1, 1, 28, 28])),
        "shape-int64-max-batch": ("ModelInfer", shaped(model, [INT64_MAX, 1, 28, 28])),
        "shape-2^32-plus-one-batch": ("ModelInfer", shaped(model, [2**32 + 1, 1, 28, 28])),
        "shape-int64-max-inner": ("ModelInfer", shaped(model, [1, 1, 28, INT64_MAX])),
        "shape-int64-min-inner": ("ModelInfer", shaped(model, [1, INT64_MIN, 28, 28])),
        "version-past-int64-infer": ("ModelInfer", shaped(model, [1, 1, 28, 28], version="99999999999999999999")),
        "version-int64-max-infer": ("ModelInfer", shaped(model, [1, 1, 28, 28], version=str(INT64_MAX))),
        "version-past-int64-metadata": ("ModelMetadata", service_pb2.ModelMetadataRequest(name=model, version="99999999999999999999")),
        "version-past-int64-ready": ("ModelReady", service_pb2.ModelReadyRequest(name=model, version="99999999999999999999")),
        "version-int64-max-config": ("ModelConfig", service_pb2.ModelConfigRequest(name=model, version=str(INT64_MAX))),
        "version-past-int64-statistics": ("ModelStatistics", service_pb2.ModelStatisticsRequest(name=model, version="99999999999999999999")),
        "shm-input-unknown-region": ("ModelInfer", shm_request(model, region)),
        "shm-input-region-int": ("ModelInfer", shm_request(model, {"shared_memory_region": ("int64_param", 1)})),
        "shm-input-no-byte-size": ("ModelInfer", shm_request(model, {"shared_memory_region": ("string_param", "nosuch")})),
        "shm-input-offset-alone": ("ModelInfer", shm_request(model, {"shared_memory_offset": ("int64_param", 0)})),
        "shm-input-offset-string": (
            "ModelInfer",
            shm_request(model, {**region, "shared_memory_offset": ("string_param", "0")}),
        ),
        "shm-input-and-contents": ("ModelInfer", shm_request(model, region, contents=True)),
        "shm-output-unknown-region": ("ModelInfer", shm_request(model, None, {"shared_memory_region": ("string_param", "nosuch"), "shared_memory_byte_size": ("int64_param", 40)})),
        "shm-output-region-bool": ("ModelInfer", shm_request(model, None, {"shared_memory_region": ("bool_param", True)})),
        "shm-output-and-classification": (
            "ModelInfer",
            shm_request(model, None, {"shared_memory_region": ("string_param", "nosuch"), "shared_memory_byte_size": ("int64_param", 40), "classification": ("int64_param", 1)}),
        ),
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
    for name, (method, request) in request_cases(model).items():
        try:
            answer = getattr(stub, method)(request, timeout=30)
            out[name] = "OK" if method == "ModelInfer" else f"OK {json.dumps(str(answer)[:200])}"
        except grpc.RpcError as e:
            out[name] = f"{e.code().name}: {e.details()}"
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
