"""The requests perf_analyzer (Triton's load generator) sends, in each of its
modes, made with grpcio and tritonclient here because its own binary does
not run on this Debian (the PyPI wheels need glibc 2.38). Prints, per mode,
whether every request succeeded, or the first error.

What it sends, from perf_analyzer's client backend (triton-inference-server/
perf_analyzer, client_backend/triton) and tritonclient's C++ gRPC client:
every ModelInfer and ModelStreamInfer request carries the bool parameter
triton_enable_empty_final_response (true when streaming); --shared-memory
system registers one region per input and per output (keys /<name>, output
regions of --output-shared-memory-size, 100 KiB by default), fills the
inputs once and names the regions in every request; --collect-metrics reads
the Prometheus text of the metrics port.

usage: perf_requests.py GRPC_URL HTTP_URL MODEL [METRICS_URL]
"""
import json
import queue
import sys
import threading
import urllib.request
import uuid

import grpc
import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm
from tritonclient.grpc import service_pb2, service_pb2_grpc

IMAGE = np.linspace(0, 1, 784, dtype=np.float64).astype(np.float32).reshape(1, 1, 28, 28)
OUTPUT_REGION = 100 * 1024
COUNT = 4


def request(model, shared=None, streaming=False):
    r = service_pb2.ModelInferRequest(model_name=model)
    r.parameters["triton_enable_empty_final_response"].bool_param = streaming
    i = r.inputs.add(name="digit_image", datatype="FP32", shape=[1, 1, 28, 28])
    o = r.outputs.add(name="output_labels")
    if shared is None:
        r.raw_input_contents.append(IMAGE.tobytes())
    else:
        i.parameters["shared_memory_region"].string_param = shared[0]
        i.parameters["shared_memory_byte_size"].int64_param = IMAGE.nbytes
        o.parameters["shared_memory_region"].string_param = shared[1]
        o.parameters["shared_memory_byte_size"].int64_param = OUTPUT_REGION
    return r


def grpc_error(e):
    return {"ok": False, "status": str(e.code()), "message": e.details()}


def grpc_modes(url, model):
    channel = grpc.insecure_channel(url)
    stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
    out = {}
    try:
        for _ in range(COUNT):
            stub.ModelInfer(request(model))
        out["grpc-sync"] = {"ok": True}
    except grpc.RpcError as e:
        out["grpc-sync"] = grpc_error(e)
    try:
        futures = [stub.ModelInfer.future(request(model)) for _ in range(COUNT)]
        for f in futures:
            f.result()
        out["grpc-async"] = {"ok": True}
    except grpc.RpcError as e:
        out["grpc-async"] = grpc_error(e)
    try:
        answers = list(stub.ModelStreamInfer(iter([request(model, streaming=True) for _ in range(COUNT)])))
        errors = [a.error_message for a in answers if a.error_message != ""]
        final = [a.infer_response.parameters["triton_final_response"].bool_param for a in answers]
        out["grpc-streaming"] = {"ok": not errors and len(answers) == COUNT, "errors": errors[:1], "final": final}
    except grpc.RpcError as e:
        out["grpc-streaming"] = grpc_error(e)
    channel.close()
    return out


def shm_mode(module, url, model, tag):
    client = module.InferenceServerClient(url=url)
    keys = [f"/digit_image_{tag}_{uuid.uuid4().hex[:6]}", f"/output_labels_{tag}_{uuid.uuid4().hex[:6]}"]
    handles = [shm.create_shared_memory_region(f"{tag}_in", keys[0], IMAGE.nbytes), shm.create_shared_memory_region(f"{tag}_out", keys[1], OUTPUT_REGION)]
    try:
        shm.set_shared_memory_region(handles[0], [IMAGE])
        client.unregister_system_shared_memory()
        client.register_system_shared_memory("digit_image", keys[0], IMAGE.nbytes)
        client.register_system_shared_memory("output_labels", keys[1], OUTPUT_REGION)
        if module is grpcclient:
            stub = service_pb2_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(url))
            for _ in range(COUNT):
                stub.ModelInfer(request(model, shared=("digit_image", "output_labels")))
        else:
            for _ in range(COUNT):
                i = module.InferInput("digit_image", [1, 1, 28, 28], "FP32")
                i.set_shared_memory("digit_image", IMAGE.nbytes)
                o = module.InferRequestedOutput("output_labels")
                o.set_shared_memory("output_labels", OUTPUT_REGION)
                client.infer(model, [i], outputs=[o])
        result = {"ok": True, "sum": round(float(shm.get_contents_as_numpy(handles[1], np.float32, [10]).sum()), 3)}
    except grpc.RpcError as e:
        result = grpc_error(e)
    except Exception as e:  # tritonclient's InferenceServerException
        result = {"ok": False, "message": str(e)}
    finally:
        try:
            client.unregister_system_shared_memory()
        except Exception:
            pass
        for h in handles:
            shm.destroy_shared_memory_region(h)
    return result


def http_modes(url, model):
    out = {}
    client = httpclient.InferenceServerClient(url=url, concurrency=COUNT)
    i = httpclient.InferInput("digit_image", [1, 1, 28, 28], "FP32")
    i.set_data_from_numpy(IMAGE, binary_data=True)
    try:
        for _ in range(COUNT):
            client.infer(model, [i])
        out["http-sync"] = {"ok": True}
        for r in [client.async_infer(model, [i]) for _ in range(COUNT)]:
            r.get_result()
        out["http-async"] = {"ok": True}
    except Exception as e:
        out["http"] = {"ok": False, "message": str(e)}
    return out


def metrics(url):
    try:
        text = urllib.request.urlopen(f"http://{url}/metrics", timeout=10).read().decode()
        families = sorted({line.split()[2] for line in text.splitlines() if line.startswith("# TYPE nv_inference")})
        return {"ok": True, "families": families}
    except Exception as e:
        return {"ok": False, "message": str(e)}


def main():
    grpc_url, http_url, model = sys.argv[1:4]
    out = grpc_modes(grpc_url, model)
    out["grpc-shm-system"] = shm_mode(grpcclient, grpc_url, model, "g")
    out.update(http_modes(http_url, model))
    out["http-shm-system"] = shm_mode(httpclient, http_url, model, "h")
    if len(sys.argv) > 4:
        out["metrics"] = metrics(sys.argv[4])
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
