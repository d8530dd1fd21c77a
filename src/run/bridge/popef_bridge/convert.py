"""Import (SDK-written files to the host, blob by blob) and export (the
host's model to a file written by popef.Writer), payloads streamed in
chunks both ways."""

from .errors import UserError
from .metadata import build_metadata, byte_size, info_json, metadata_json, tensor_info


def create_file(path):
    """popef.Writer(path) opens an existing file: Graphcore's own rewriting script creates it first."""
    with open(path, "wb"):
        pass


def create_blob_writer(sdk, writer, blob, compress=False):
    """The SDK's writer for one blob the host describes (kind, name, tensorInfo, executable)."""
    popef = sdk.popef
    kind = blob["kind"]
    if kind == "executable":
        return writer.createExecutable(blob["name"], compress)
    if kind == "opaque":
        return writer.createOpaqueBlob(blob["name"], blob["executable"])
    info = popef.FeedDataInfo() if kind == "feed" else popef.TensorDataInfo()
    info.setName(blob["name"])
    info.setTensorInfo(tensor_info(sdk, blob["tensorInfo"]))
    return writer.createFeedData(info) if kind == "feed" else writer.createTensorData(info)


def payload_bytes(sdk, data):
    """Payload bytes of whatever the SDK returns (bytes, numpy arrays, buffers)."""
    np = sdk.np
    if np is not None and isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).view(np.uint8).reshape(-1)
    return data


def drain(streams):
    """Reads what the host still sends of every stream, to keep the channel in step after a failure."""
    for stream in streams:
        for _ in stream:
            pass


def do_import(channel, sdk, id_, message, warnings):
    """Reads SDK-written files with popef.Reader and streams every blob to the host, one message per blob.
    With "executables": false the executables' payloads are not read (each is
    sent empty): what the metadata views of dump, config and validate need,
    without copying a large executable."""
    reader = sdk.popef.Reader()
    executables = message.get("executables", True) is not False
    for path in message["files"]:
        try:
            reader.parseFile(path)
        except Exception as e:
            raise UserError("E_SDK_READ", "the SDK's popef.Reader cannot read %s: %s: %s" % (path, type(e).__name__, e)) from e
    for e in reader.executables():
        channel.write_chunked({"type": "blob", "id": id_, "kind": "executable", "name": e.name}, payload_bytes(sdk, e.executable()) if executables else b"")
    for md in reader.metadata():
        channel.write_message({"type": "blob", "id": id_, "kind": "metadata", "metadata": metadata_json(sdk, md, warnings)})
    for t in reader.tensors():
        head = {"type": "blob", "id": id_, "kind": "tensor", "name": t.info.name(), "tensorInfo": info_json(t.info.tensorInfo())}
        channel.write_chunked(head, payload_bytes(sdk, t.data()))
    for f in reader.feeds():
        info = info_json(f.info.tensorInfo())
        data = payload_bytes(sdk, f.data())
        sample = byte_size(info)
        count = len(memoryview(data).cast("B")) // sample if sample else 0
        channel.write_chunked({"type": "blob", "id": id_, "kind": "feed", "name": f.info.name(), "tensorInfo": info, "sampleCount": count}, data)
    for o in reader.opaqueBlobs():
        channel.write_chunked({"type": "blob", "id": id_, "kind": "opaque", "name": o.name, "executable": o.executable}, payload_bytes(sdk, o.data()))
    reply = {"type": "imported", "id": id_, "sdkVersion": sdk.version()}
    if warnings:
        reply["warnings"] = list(warnings)
    channel.write_message(reply)


def do_export(channel, sdk, id_, message, warnings):
    """Writes the host's model with the SDK's popef.Writer, streaming each payload into its blob writer."""
    # One lazy chunk stream per announced payload, read in announcement order.
    streams = [channel.read_chunks(a) for a in message.get("tensors", [])]
    try:
        sdk.require("export", {b["kind"] for b in message["model"]["blobs"]})
        create_file(message["path"])
        writer = sdk.popef.Writer(message["path"])
        compress = bool(message.get("compress", False))
        for blob in message["model"]["blobs"]:
            w = create_blob_writer(sdk, writer, blob, compress)
            for chunk in streams[blob["tensor"]]:
                w.write(chunk, len(chunk))
            w.close()
        for md in message["model"]["metadata"]:
            writer.writeMetadata(build_metadata(sdk, md, warnings))
        writer.close()
    except Exception:
        # Keep the stream in step: read what the host still sends (the rest
        # of a stream part-read, and those not started), then report.
        drain(streams)
        raise
    reply = {"type": "exported", "id": id_}
    if warnings:
        reply["warnings"] = list(warnings)
    channel.write_message(reply)
