"""Sends the same requests with the real tritonclient (gRPC and HTTP) and
prints, per case, what the server answered: the status and the message of
an error, or the shapes of a success. The test runs it against popef serve
and against a real Triton server on the same repository and compares.

usage: request_cases.py GRPC_URL HTTP_URL MODEL
"""
import json
import sys

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException


def image(shape=(1, 1, 28, 28), dtype=np.float32):
    return np.linspace(0, 1, int(np.prod(shape)), dtype=np.float64).astype(dtype).reshape(shape)


def cases(model):
    """name -> (model, [(input name, array, protocol datatype)], [output names], version)"""
    good = ("digit_image", image(), "FP32")
    return {
        "ok": (model, [good], [], ""),
        "wrong-shape": (model, [("digit_image", image((1, 1, 28, 27)), "FP32")], [], ""),
        "wrong-rank": (model, [("digit_image", image((1, 784)), "FP32")], [], ""),
        "wrong-datatype": (model, [("digit_image", image(dtype=np.float64), "FP64")], [], ""),
        "batch-too-large": (model, [("digit_image", image((2, 1, 28, 28)), "FP32")], [], ""),
        "unknown-model": ("nosuch", [good], [], ""),
        "unknown-version": (model, [good], [], "7"),
        "unknown-input": (model, [("image", image(), "FP32")], [], ""),
        "extra-input": (model, [good, ("extra", image(), "FP32")], [], ""),
        "missing-input": (model, [], [], ""),
        "unknown-output": (model, [good], ["nosuch_output"], ""),
        "duplicate-input": (model, [good, good], [], ""),
    }


def run(module, url, case):
    model, inputs, outputs, version = case
    client = module.InferenceServerClient(url=url)
    infer_inputs = []
    for name, array, datatype in inputs:
        i = module.InferInput(name, list(array.shape), datatype)
        i.set_data_from_numpy(array)
        infer_inputs.append(i)
    requested = [module.InferRequestedOutput(n) for n in outputs] or None
    try:
        result = client.infer(model, infer_inputs, model_version=version, outputs=requested)
        response = result.get_response(as_json=True) if module is grpcclient else result.get_response()
        return {"ok": True, "outputs": sorted((o["name"], o["datatype"], [int(d) for d in o.get("shape", [])]) for o in response.get("outputs", []))}
    except InferenceServerException as e:
        return {"ok": False, "status": str(e.status()), "message": e.message()}


def main():
    grpc_url, http_url, model = sys.argv[1:4]
    out = {}
    for name, case in cases(model).items():
        out[f"grpc/{name}"] = run(grpcclient, grpc_url, case)
        out[f"http/{name}"] = run(httpclient, http_url, case)
    for module, url, key in ((grpcclient, grpc_url, "grpc"), (httpclient, http_url, "http")):
        client = module.InferenceServerClient(url=url)
        meta = client.get_model_metadata(model, as_json=True) if module is grpcclient else client.get_model_metadata(model)
        out[f"{key}/metadata"] = meta
        config = client.get_model_config(model, as_json=True) if module is grpcclient else client.get_model_config(model)
        out[f"{key}/config-fields"] = sorted((config.get("config", config)).keys())
        out[f"{key}/live"] = client.is_server_live()
        out[f"{key}/model-ready"] = client.is_model_ready(model)
        out[f"{key}/unknown-model-ready"] = client.is_model_ready("nosuch")
        # After every case: which requests the server counted, and how (Triton counts none that fail before they reach the model).
        stats = client.get_inference_statistics(model, as_json=True) if module is grpcclient else client.get_inference_statistics(model)
        model_stats = stats["model_stats"][0]
        inference = model_stats.get("inference_stats", {})
        out[f"{key}/statistics-counts"] = {
            "inference_count": int(model_stats.get("inference_count", 0)),
            "execution_count": int(model_stats.get("execution_count", 0)),
            "success": int(inference.get("success", {}).get("count", 0)),
            "fail": int(inference.get("fail", {}).get("count", 0)),
        }
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
