"""Streaming, shared memory and model control with the real tritonclient:
prints, per case, what the server answered (status and message of an
error, or what a success returned). The differential test runs it against
popef serve and a real Triton server on the same repository and compares.

usage: protocol_cases.py GRPC_URL HTTP_URL MODEL MODE
  MODE none: streaming, shared memory, model control refused
  MODE explicit: load / unload and the repository index (the server runs
  with --model-control-mode explicit and MODEL not loaded at start)
"""
import json
import queue
import sys
import time
import uuid

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm
from tritonclient.utils import InferenceServerException

IMAGE = np.linspace(0, 1, 784, dtype=np.float64).astype(np.float32).reshape(1, 1, 28, 28)


def outcome(call):
    try:
        value = call()
        return {"ok": True, "value": value}
    except InferenceServerException as e:
        return {"ok": False, "status": str(e.status()), "message": e.message()}


def stream_cases(url, model):
    """Several requests on one stream, good and bad: each answer in order."""
    answers = queue.Queue()
    client = grpcclient.InferenceServerClient(url=url)
    client.start_stream(callback=lambda result, error: answers.put((result, error)))

    def request(name, shape=(1, 1, 28, 28), model_name=model, request_id="", version=""):
        i = grpcclient.InferInput(name, list(shape), "FP32")
        i.set_data_from_numpy(np.zeros(shape, dtype=np.float32))
        client.async_stream_infer(model_name, [i], request_id=request_id, model_version=version)

    request("digit_image", request_id="good")
    request("digit_image", shape=(1, 1, 28, 27), request_id="bad-shape")
    request("digit_image", model_name="nosuch", request_id="unknown-model")
    request("nosuch_input", request_id="")
    request("digit_image", request_id="version", version="7")
    request("digit_image", request_id="good-again")
    out = []
    for _ in range(6):
        result, error = answers.get(timeout=60)
        if error is not None:
            out.append({"error": error.message(), "status": str(error.status())})
        else:
            r = result.get_response(as_json=True)
            out.append({"id": r.get("id", ""), "model_name": r.get("model_name", ""), "parameters": r.get("parameters", {})})
    client.stop_stream()
    client.close()
    return out


def region(name, size):
    key = f"/popef_{name}_{uuid.uuid4().hex[:8]}"
    handle = shm.create_shared_memory_region(name, key, size)
    return key, handle


def shm_cases(module, url, model, tag):
    client = module.InferenceServerClient(url=url)
    out = {}
    status = lambda **kw: client.get_system_shared_memory_status(**kw, **({"as_json": True} if module is grpcclient else {}))
    client.unregister_system_shared_memory()
    in_key, in_handle = region(f"in_{tag}", IMAGE.nbytes)
    out_key, out_handle = region(f"out_{tag}", 40)
    shm.set_shared_memory_region(in_handle, [IMAGE])
    try:
        out["register"] = outcome(lambda: client.register_system_shared_memory("input", in_key, IMAGE.nbytes) or "done")
        out["register-again"] = outcome(lambda: client.register_system_shared_memory("input", in_key, IMAGE.nbytes))
        out["register-too-large"] = outcome(lambda: client.register_system_shared_memory("big", in_key, IMAGE.nbytes + 1))
        out["register-offset-past-end"] = outcome(lambda: client.register_system_shared_memory("big", in_key, 8, offset=IMAGE.nbytes))
        out["register-unknown-key"] = outcome(lambda: client.register_system_shared_memory("nokey", "/popef_no_such_key", 8))
        out["register-output"] = outcome(lambda: client.register_system_shared_memory("output", out_key, 40) or "done")
        out["register-small"] = outcome(lambda: client.register_system_shared_memory("small", out_key, 8) or "done")
        def listed():
            s = status()
            regions = s.get("regions", {}) if isinstance(s, dict) and "regions" in s else s
            items = regions.values() if isinstance(regions, dict) else regions
            return sorted((r["name"], r["key"] == {"input": in_key, "output": out_key, "small": out_key}[r["name"]], int(r.get("offset", 0)), int(r["byte_size"])) for r in items)
        out["status"] = outcome(listed)
        out["status-one"] = outcome(lambda: len(status(region_name="input").get("regions", status(region_name="input"))) if module is grpcclient else len(status(region_name="input")))
        out["status-unknown"] = outcome(lambda: status(region_name="nosuch"))

        def infer(input_params, output_params=None, outputs=True):
            i = module.InferInput("digit_image", [1, 1, 28, 28], "FP32")
            if input_params is None:
                i.set_data_from_numpy(IMAGE)
            else:
                i.set_shared_memory(*input_params)
            requested = None
            if outputs:
                o = module.InferRequestedOutput("output_labels")
                if output_params is not None:
                    o.set_shared_memory(*output_params)
                requested = [o]
            r = client.infer(model, [i], outputs=requested)
            return "done"

        out["infer-shm-in"] = outcome(lambda: infer(("input", IMAGE.nbytes)))
        out["infer-shm-in-out"] = outcome(lambda: infer(("input", IMAGE.nbytes), ("output", 40)))
        # What the answer left in the output region (a softmax sums to 1; the stand-in backend writes nothing).
        out["output-region-sum"] = round(float(shm.get_contents_as_numpy(out_handle, np.float32, [10]).sum()), 3)
        out["infer-shm-unknown-region"] = outcome(lambda: infer(("nosuch", IMAGE.nbytes)))
        out["infer-shm-wrong-size"] = outcome(lambda: infer(("input", IMAGE.nbytes - 4)))
        out["infer-shm-past-end"] = outcome(lambda: infer(("input", IMAGE.nbytes, 8)))
        out["infer-shm-offset-past-end"] = outcome(lambda: infer(("input", 4, IMAGE.nbytes + 4)))
        out["infer-shm-output-unknown"] = outcome(lambda: infer(None, ("nosuch", 40)))
        out["infer-shm-output-past-end"] = outcome(lambda: infer(None, ("output", 48)))
        out["unregister-one"] = outcome(lambda: client.unregister_system_shared_memory("small") or "done")
        out["unregister-unknown"] = outcome(lambda: client.unregister_system_shared_memory("nosuch") or "done")
        out["unregister-all"] = outcome(lambda: client.unregister_system_shared_memory() or "done")
        out["status-after"] = outcome(listed)
        out["cuda-status"] = outcome(lambda: client.get_cuda_shared_memory_status(**({"as_json": True} if module is grpcclient else {})))
        out["cuda-status-one"] = outcome(lambda: client.get_cuda_shared_memory_status("nosuch"))
        out["cuda-register"] = outcome(lambda: client.register_cuda_shared_memory("gpu", b"\0" * 64, 0, 64))
        out["cuda-unregister"] = outcome(lambda: client.unregister_cuda_shared_memory("gpu") or "done")
        out["cuda-unregister-all"] = outcome(lambda: client.unregister_cuda_shared_memory() or "done")
    finally:
        client.unregister_system_shared_memory()
        shm.destroy_shared_memory_region(in_handle)
        shm.destroy_shared_memory_region(out_handle)
    # The keys are unique to each run: messages name them as placeholders.
    text = json.dumps(out).replace(in_key, "<input key>").replace(out_key, "<output key>")
    return json.loads(text)


def grpc_param_cases(url, model):
    """Shared-memory parameters tritonclient would not send wrong: raw InferInput parameters."""
    client = grpcclient.InferenceServerClient(url=url)
    out = {}

    def infer(params, output_params=None):
        i = grpcclient.InferInput("digit_image", [1, 1, 28, 28], "FP32")
        i.set_data_from_numpy(IMAGE)
        i._input.ClearField("parameters")
        i._raw_content = None
        for k, v in params.items():
            if isinstance(v, str):
                i._input.parameters[k].string_param = v
            elif isinstance(v, bool):
                i._input.parameters[k].bool_param = v
            else:
                i._input.parameters[k].int64_param = v
        outputs = None
        if output_params is not None:
            o = grpcclient.InferRequestedOutput("output_labels")
            for k, v in output_params.items():
                if isinstance(v, str):
                    o._output.parameters[k].string_param = v
                else:
                    o._output.parameters[k].int64_param = v
            outputs = [o]
        client.infer(model, [i], outputs=outputs)
        return "done"

    out["region-not-string"] = outcome(lambda: infer({"shared_memory_region": 3, "shared_memory_byte_size": 4}))
    out["offset-without-region"] = outcome(lambda: infer({"shared_memory_offset": 0}))
    out["size-without-region"] = outcome(lambda: infer({"shared_memory_byte_size": 4}))
    out["region-without-size"] = outcome(lambda: infer({"shared_memory_region": "x"}))
    out["size-not-int"] = outcome(lambda: infer({"shared_memory_region": "x", "shared_memory_byte_size": "4"}))
    out["output-both"] = outcome(lambda: infer({"shared_memory_region": "x", "shared_memory_byte_size": 4}, {"shared_memory_region": "y", "shared_memory_byte_size": 4, "classification": 1}))
    return out


def control_cases(module, url, model, mode):
    client = module.InferenceServerClient(url=url)
    out = {}
    index = lambda: sorted(json.dumps(e, sort_keys=True) for e in (client.get_model_repository_index(as_json=True).get("models", []) if module is grpcclient else client.get_model_repository_index()))
    out["index-start"] = outcome(index)
    out["load"] = outcome(lambda: client.load_model(model) or "done")
    out["load-unknown"] = outcome(lambda: client.load_model("nosuch") or "done")
    if mode == "explicit":
        out["ready-after-load"] = outcome(lambda: client.is_model_ready(model))
        out["index-loaded"] = outcome(index)
        out["reload"] = outcome(lambda: client.load_model(model) or "done")
        out["unload"] = outcome(lambda: client.unload_model(model) or "done")
        out["ready-after-unload"] = outcome(lambda: client.is_model_ready(model))
        # An unload answers while the model is UNLOADING (its queue drains, then it closes): wait for the end.
        for _ in range(100):
            if "UNLOADING" not in json.dumps(index()):
                break
            time.sleep(0.1)
        out["index-unloaded"] = outcome(index)
        out["metadata-after-unload"] = outcome(lambda: client.get_model_metadata(model) and "done")
        out["unload-unknown"] = outcome(lambda: client.unload_model("nosuch") or "done")
        out["unload-again"] = outcome(lambda: client.unload_model(model) or "done")
        out["index-ready-only"] = outcome(lambda: client.get_model_repository_index(as_json=True).get("models", []) if module is grpcclient else client.get_model_repository_index())
        out["load-again"] = outcome(lambda: client.load_model(model) or "done")
        out["ready-after-load-again"] = outcome(lambda: client.is_model_ready(model))
    else:
        out["unload"] = outcome(lambda: client.unload_model(model) or "done")
    return out


def main():
    grpc_url, http_url, model, mode = sys.argv[1:5]
    out = {}
    if mode == "none":
        out["grpc/stream"] = stream_cases(grpc_url, model)
        out["grpc/shm"] = shm_cases(grpcclient, grpc_url, model, "g")
        out["grpc/shm-params"] = grpc_param_cases(grpc_url, model)
        out["http/shm"] = shm_cases(httpclient, http_url, model, "h")
    out["grpc/control"] = control_cases(grpcclient, grpc_url, model, mode)
    out["http/control"] = control_cases(httpclient, http_url, model, mode)
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
