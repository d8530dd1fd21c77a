"""Log and trace settings with the real tritonclient (HTTP and gRPC), and raw
gRPC requests the client cannot build (wrong oneof members, several values):
prints, per case, what the server answered (the settings, or the status and
message of an error). The differential test runs it against popef serve and
a real Triton server on the same repository and compares. Every update is
undone before the script ends, and the cases run in a fixed order, because
each one starts from the settings the one before left.

usage: settings_cases.py GRPC_URL HTTP_URL MODEL
"""
import json
import sys

import grpc
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from google.protobuf import json_format
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException

DEFAULT_LOG = {"log_info": True, "log_warning": True, "log_error": True, "log_verbose_level": 0, "log_format": "default"}
CLEAR_TRACE = {"trace_level": None, "trace_rate": None, "trace_count": None, "log_frequency": None}


def outcome(call):
    try:
        return {"ok": True, "value": call()}
    except InferenceServerException as e:
        return {"ok": False, "status": str(e.status()), "message": e.message()}


def raw(stub, method, request):
    try:
        return {"ok": True, "value": json_format.MessageToDict(getattr(stub, method)(request), preserving_proto_field_name=True)}
    except grpc.RpcError as e:
        return {"ok": False, "status": str(e.code()), "message": e.details()}


def log_request(**settings):
    r = service_pb2.LogSettingsRequest()
    for key, (kind, value) in settings.items():
        if kind is None:
            r.settings[key]
        else:
            setattr(r.settings[key], kind, value)
    return r


def trace_request(model="", **settings):
    r = service_pb2.TraceSettingRequest(model_name=model)
    for key, values in settings.items():
        r.settings[key].value.extend(values)
    return r


def main():
    grpc_url, http_url, model = sys.argv[1:4]
    h = httpclient.InferenceServerClient(http_url)
    g = grpcclient.InferenceServerClient(grpc_url)
    stub = service_pb2_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(grpc_url))
    out = {}

    # Log settings over HTTP: defaults, updates, refusals; an error leaves the fields before it applied.
    out["http/log/get"] = outcome(h.get_log_settings)
    out["http/log/info-off"] = outcome(lambda: h.update_log_settings({"log_info": False}))
    out["http/log/verbose-and-format"] = outcome(lambda: h.update_log_settings({"log_verbose_level": 2, "log_format": "ISO8601"}))
    out["http/log/file"] = outcome(lambda: h.update_log_settings({"log_file": "/tmp/popef-nowhere.log"}))
    out["http/log/file-null"] = outcome(lambda: h.update_log_settings({"log_file": None}))
    out["http/log/info-not-bool"] = outcome(lambda: h.update_log_settings({"log_info": 1}))
    out["http/log/verbose-negative"] = outcome(lambda: h.update_log_settings({"log_verbose_level": -1}))
    out["http/log/format-not-string"] = outcome(lambda: h.update_log_settings({"log_format": 3}))
    out["http/log/partial-then-bad-format"] = outcome(lambda: h.update_log_settings({"log_error": False, "log_format": "xml"}))
    out["http/log/after-partial"] = outcome(h.get_log_settings)
    out["http/log/restore"] = outcome(lambda: h.update_log_settings(DEFAULT_LOG))

    # Log settings over gRPC, through the client, then raw for the oneof checks.
    out["grpc/log/get"] = outcome(lambda: g.get_log_settings(as_json=True))
    out["grpc/log/warning-off"] = outcome(lambda: g.update_log_settings({"log_warning": False}, as_json=True))
    out["grpc/log/file"] = outcome(lambda: g.update_log_settings({"log_file": ""}, as_json=True))
    out["grpc/log/bad-format"] = outcome(lambda: g.update_log_settings({"log_format": "xml"}, as_json=True))
    out["grpc/log/info-as-uint"] = raw(stub, "LogSettings", log_request(log_info=("uint32_param", 1)))
    out["grpc/log/verbose-as-bool"] = raw(stub, "LogSettings", log_request(log_verbose_level=("bool_param", True)))
    out["grpc/log/format-as-bool"] = raw(stub, "LogSettings", log_request(log_format=("bool_param", True)))
    out["grpc/log/error-unset"] = raw(stub, "LogSettings", log_request(log_error=(None, None)))
    out["grpc/log/verbose-3"] = raw(stub, "LogSettings", log_request(log_verbose_level=("uint32_param", 3)))
    out["grpc/log/restore"] = outcome(lambda: g.update_log_settings(DEFAULT_LOG, as_json=True))

    # Trace settings over HTTP: global, per model, the model's fallback to the global ones, clearing.
    out["http/trace/get"] = outcome(h.get_trace_settings)
    out["http/trace/model-get"] = outcome(lambda: h.get_trace_settings(model_name=model))
    out["http/trace/unknown-model"] = outcome(lambda: h.get_trace_settings(model_name="nosuch"))
    out["http/trace/rate"] = outcome(lambda: h.update_trace_settings(settings={"trace_rate": "5"}))
    out["http/trace/model-count"] = outcome(lambda: h.update_trace_settings(model_name=model, settings={"trace_count": "7"}))
    out["http/trace/global-rate-again"] = outcome(lambda: h.update_trace_settings(settings={"trace_rate": "9", "log_frequency": "3"}))
    out["http/trace/model-after-global"] = outcome(lambda: h.get_trace_settings(model_name=model))
    out["http/trace/model-clear"] = outcome(lambda: h.update_trace_settings(model_name=model, settings={"trace_count": None}))
    out["http/trace/model-after-clear"] = outcome(lambda: h.get_trace_settings(model_name=model))
    for name, settings in [
        ("level-without-file", {"trace_level": ["TIMESTAMPS"]}),
        ("file", {"trace_file": "/tmp/popef-trace.json"}),
        ("off-and-more", {"trace_level": ["OFF", "TENSORS"]}),
        ("level-not-list", {"trace_level": "OFF"}),
        ("level-unknown-name", {"trace_level": ["LOUD"]}),
        ("rate-not-number", {"trace_rate": "fast"}),
        ("rate-not-string", {"trace_rate": 5}),
        ("rate-out-of-range", {"trace_rate": "99999999999"}),
        ("rate-negative-wraps", {"trace_rate": "-3"}),
        ("rate-leading-digits", {"trace_rate": " 12abc"}),
        ("rate-zero", {"trace_rate": "0"}),
        ("count-below-floor", {"trace_count": "-5"}),
        ("count-zero", {"trace_count": "0"}),
        ("frequency-out-of-range", {"log_frequency": "99999999999"}),
        ("mode-ignored", {"trace_mode": "opentelemetry"}),
    ]:
        out[f"http/trace/{name}"] = outcome(lambda: h.update_trace_settings(settings=settings))
    out["http/trace/restore"] = outcome(lambda: h.update_trace_settings(settings=CLEAR_TRACE))

    # Trace settings over gRPC, through the client, then raw for several values.
    out["grpc/trace/get"] = outcome(lambda: g.get_trace_settings(as_json=True))
    out["grpc/trace/model-rate"] = outcome(lambda: g.update_trace_settings(model_name=model, settings={"trace_rate": "4"}, as_json=True))
    out["grpc/trace/model-get"] = outcome(lambda: g.get_trace_settings(model_name=model, as_json=True))
    out["grpc/trace/unknown-model"] = outcome(lambda: g.get_trace_settings(model_name="nosuch", as_json=True))
    out["grpc/trace/level-without-file"] = outcome(lambda: g.update_trace_settings(settings={"trace_level": ["TENSORS"]}, as_json=True))
    out["grpc/trace/count-below-floor"] = outcome(lambda: g.update_trace_settings(settings={"trace_count": "-2"}, as_json=True))
    out["grpc/trace/file"] = outcome(lambda: g.update_trace_settings(settings={"trace_file": None}, as_json=True))
    out["grpc/trace/two-rates"] = raw(stub, "TraceSetting", trace_request(trace_rate=["1", "2"]))
    out["grpc/trace/frequency-not-number"] = raw(stub, "TraceSetting", trace_request(log_frequency=["often"]))
    out["grpc/trace/model-clear"] = outcome(lambda: g.update_trace_settings(model_name=model, settings={"trace_rate": None}, as_json=True))
    out["grpc/trace/restore"] = outcome(lambda: g.update_trace_settings(settings=CLEAR_TRACE, as_json=True))
    print(json.dumps(out, indent=1, sort_keys=True))


main()
