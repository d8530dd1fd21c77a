"""popef.Metadata to and from the JSON form of the open layout's metadata
(schemas/manifest.schema.json), and the small conversions both ways share."""

from .sdk import GUARDED_FIELDS

ELEMENT_SIZES = {"BOOL": 1, "F8": 1, "F8143": 1, "F8152": 1, "F16": 2, "F32": 4, "F64": 8, "S8": 1, "U8": 1, "S16": 2,
                 "U16": 2, "S32": 4, "U32": 4, "S64": 8, "U64": 8}

# The JSON names of the guarded scalar fields (sdk.GUARDED_FIELDS).
JSON_NAMES = {"IsPOD": "isPOD", "NumProcesses": "numProcesses", "SeedHandle": "seedHandle"}


def text_of(value):
    """An Option's name or value: a method in the SDK's API (C++ name()/value()); an attribute tolerated."""
    return value() if callable(value) else value


def dtype_name(data_type):
    """The PopEF name of a popef.DataType value (pybind11 enums carry .name)."""
    name = getattr(data_type, "name", None)
    if name is None:
        name = str(data_type).split(".")[-1]
    return name


def info_json(ti):
    return {"dtype": dtype_name(ti.dataType()), "shape": [int(d) for d in ti.shape()]}


def byte_size(info):
    """Bytes of one tensor of a JSON tensorInfo."""
    size = ELEMENT_SIZES[info["dtype"]]
    for d in info["shape"]:
        size *= d
    return size


def append_all(sdk, container, items, what):
    """Adds to a mutable list the SDK hands out; checks that it was not a copy."""
    before = len(container)
    for item in items:
        container.append(item)
    if len(container) != before + len(items):
        raise sdk.error("mutable %s (the list it returns is a copy)" % what)


def tensor_info(sdk, info):
    ti = sdk.popef.TensorInfo()
    ti.setDataType(getattr(sdk.popef.DataType, info["dtype"]))
    ti.setShape(list(info["shape"]))
    return ti


def build_metadata(sdk, md, warnings):
    """A popef.Metadata from the JSON form of the open layout's metadata.
    Anchors and options are appended to the mutable lists the getters return
    (the SDK's API has no setAnchors); deviceIterations exists from SDK 3.3.
    What this SDK cannot store is added to `warnings`."""
    popef = sdk.popef
    m = popef.Metadata()
    m.setExecutable(md["executable"])
    anchors = []
    for a in md["anchors"]:
        anchor = popef.Anchor()
        anchor.setName(a["name"])
        anchor.setHandle(a["handle"])
        anchor.setTensorInfo(tensor_info(sdk, a["tensorInfo"]))
        anchor.setIsPerReplica(a["isPerReplica"])
        anchor.setType(getattr(popef.TensorType, a["type"]))
        anchor.setPrograms(list(a["programs"]))
        anchors.append(anchor)
    append_all(sdk, m.anchors(), anchors, "Metadata.anchors()")
    flow = popef.ProgramFlow()
    flow.setLoad(list(md["programFlow"]["load"]))
    flow.setMain(list(md["programFlow"]["main"]))
    flow.setSave(list(md["programFlow"]["save"]))
    m.setProgramFlow(flow)
    programs = m.programsMap()
    for p in md["programsMap"]:
        programs[p["index"]] = p["name"]
    if len(m.programsMap()) != len({p["index"] for p in md["programsMap"]}):
        raise sdk.error("mutable Metadata.programsMap() (the map it returns is a copy)")
    m.setReplicationFactor(md["replicationFactor"])
    m.setNumIpus(md["numIpus"])
    m.setIpuVersion(md["ipuVersion"])
    m.setIsInference(md["isInference"])
    set_guarded(sdk, m, md, "DeviceIterations", "deviceIterations", (0, 1), warnings, "SDK 3.3 and later")
    for field, default in GUARDED_FIELDS.items():
        set_guarded(sdk, m, md, field, JSON_NAMES[field], (default,), warnings, "its Python spelling is inferred from the C++ API")
    append_all(sdk, m.engineOptions(), [popef.Option(o["name"], o["value"]) for o in md["engineOptions"]], "Metadata.engineOptions()")
    append_all(sdk, m.deviceOptions(), [popef.Option(o["name"], o["value"]) for o in md["deviceOptions"]], "Metadata.deviceOptions()")
    return m


def set_guarded(sdk, m, md, field, key, defaults, warnings, note):
    """Sets a field the SDK may lack; without the setter a value other than a default is reported as not stored."""
    setter = getattr(m, "set" + field, None)
    if setter is not None:
        setter(md[key])
    elif md[key] not in defaults:
        warnings.append("this SDK (%s) has no Metadata.set%s (%s): %s %s is not stored" % (sdk.release(), field, note, key, json_text(md[key])))


def get_guarded(sdk, md, field, default, warnings, note):
    """Reads a field the SDK may lack; without the getter it reads as the default, with a warning."""
    getter = getattr(md, field[0].lower() + field[1:], None)
    if getter is not None:
        return getter()
    warnings.append("this SDK (%s) has no Metadata.%s%s (%s): read as %s" % (sdk.release(), field[0].lower(), field[1:], note, json_text(default)))
    return default


def json_text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"%s"' % value
    return str(value)


def metadata_json(sdk, md, warnings):
    """The open layout's JSON form of a popef.Metadata (schemas/manifest.schema.json)."""
    flow = md.programFlow()
    guarded = {JSON_NAMES[f]: get_guarded(sdk, md, f, d, warnings, "its Python spelling is inferred from the C++ API") for (f, d) in GUARDED_FIELDS.items()}
    # Before SDK 3.3 the metadata has no deviceIterations: one iteration per run, said without a warning.
    iterations = int(md.deviceIterations() or 0) if hasattr(md, "deviceIterations") else 1
    return {
        "executable": md.executable(),
        "anchors": [{
            "name": a.name(), "handle": a.handle(), "tensorInfo": info_json(a.tensorInfo()),
            "isPerReplica": bool(a.isPerReplica()), "type": dtype_name(a.type()), "programs": [int(p) for p in a.programs()],
        } for a in md.anchors()],
        "programFlow": {"load": [int(p) for p in flow.load()], "main": [int(p) for p in flow.main()], "save": [int(p) for p in flow.save()]},
        "programsMap": [{"index": int(k), "name": v} for (k, v) in dict(md.programsMap() or {}).items()],
        "replicationFactor": int(md.replicationFactor() or 0), "numIpus": int(md.numIpus() or 0), "ipuVersion": int(md.ipuVersion() or 0),
        "isPOD": bool(guarded["isPOD"]), "numProcesses": int(guarded["numProcesses"] or 0), "isInference": bool(md.isInference()),
        "deviceIterations": iterations,
        "seedHandle": guarded["seedHandle"] or "",
        "engineOptions": [{"name": text_of(o.name), "value": text_of(o.value)} for o in (md.engineOptions() or [])],
        "deviceOptions": [{"name": text_of(o.name), "value": text_of(o.value)} for o in (md.deviceOptions() or [])],
    }
