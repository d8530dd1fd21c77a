import { Builder } from 'flatbuffers';
import { DESCRIPTOR_IDENTIFIER, METADATA_IDENTIFIER } from './limits.js';
import { Anchor as FbAnchor } from './generated/popef/open/anchor.js';
import { BlobDescriptor as FbBlobDescriptor } from './generated/popef/open/blob-descriptor.js';
import { Metadata as FbMetadata } from './generated/popef/open/metadata.js';
import { Option as FbOption } from './generated/popef/open/option.js';
import { ProgramFlow as FbProgramFlow } from './generated/popef/open/program-flow.js';
import { ProgramName as FbProgramName } from './generated/popef/open/program-name.js';
import { DataType as FbDataType } from './generated/popef/open/data-type.js';
import { TensorInfo as FbTensorInfo } from './generated/popef/open/tensor-info.js';
import { TensorType as FbTensorType } from './generated/popef/open/tensor-type.js';
import type { Metadata, Option, RawDescriptor, TensorInfo } from './model.js';

/**
 * Domain objects -> FlatBuffers bytes. The builder is driven in one fixed
 * order, so equal inputs always give equal bytes (the writer's determinism
 * rests on this). Values are assumed valid: the writer validates first.
 */

function tensorInfo(b: Builder, info: TensorInfo): number {
  const shape = FbTensorInfo.createShapeVector(
    b,
    info.shape.map((d) => BigInt(d)),
  );
  // Domain names equal the generated enum's member names (both follow the .fbs).
  return FbTensorInfo.createTensorInfo(b, FbDataType[info.dtype], shape);
}

function optionList(b: Builder, options: readonly Option[]): number {
  const offsets = options.map((o) => FbOption.createOption(b, b.createString(o.name), b.createString(o.value)));
  return FbMetadata.createEngineOptionsVector(b, offsets);
}

export function encodeMetadata(m: Metadata): Uint8Array {
  const b = new Builder(1024);
  const executable = b.createString(m.executable);
  const anchors = m.anchors.map((a) => {
    const name = b.createString(a.name);
    const handle = b.createString(a.handle);
    const info = tensorInfo(b, a.tensorInfo);
    const programs = FbAnchor.createProgramsVector(b, [...a.programs]);
    FbAnchor.startAnchor(b);
    FbAnchor.addName(b, name);
    FbAnchor.addHandle(b, handle);
    FbAnchor.addTensorInfo(b, info);
    FbAnchor.addIsPerReplica(b, a.isPerReplica);
    FbAnchor.addType(b, FbTensorType[a.type]);
    FbAnchor.addPrograms(b, programs);
    return FbAnchor.endAnchor(b);
  });
  const anchorsVector = FbMetadata.createAnchorsVector(b, anchors);
  const flow = FbProgramFlow.createProgramFlow(
    b,
    FbProgramFlow.createLoadVector(b, [...m.programFlow.load]),
    FbProgramFlow.createMainVector(b, [...m.programFlow.main]),
    FbProgramFlow.createSaveVector(b, [...m.programFlow.save]),
  );
  const programsMap = FbMetadata.createProgramsMapVector(
    b,
    m.programsMap.map((p) => FbProgramName.createProgramName(b, p.index, b.createString(p.name))),
  );
  const seedHandle = b.createString(m.seedHandle);
  const engineOptions = optionList(b, m.engineOptions);
  const deviceOptions = optionList(b, m.deviceOptions);
  FbMetadata.startMetadata(b);
  FbMetadata.addExecutable(b, executable);
  FbMetadata.addAnchors(b, anchorsVector);
  FbMetadata.addProgramFlow(b, flow);
  FbMetadata.addProgramsMap(b, programsMap);
  FbMetadata.addReplicationFactor(b, BigInt(m.replicationFactor));
  FbMetadata.addNumIpus(b, BigInt(m.numIpus));
  FbMetadata.addIpuVersion(b, BigInt(m.ipuVersion));
  FbMetadata.addIsPod(b, m.isPOD);
  FbMetadata.addNumProcesses(b, BigInt(m.numProcesses));
  FbMetadata.addIsInference(b, m.isInference);
  FbMetadata.addDeviceIterations(b, BigInt(m.deviceIterations));
  FbMetadata.addSeedHandle(b, seedHandle);
  FbMetadata.addEngineOptions(b, engineOptions);
  FbMetadata.addDeviceOptions(b, deviceOptions);
  b.finish(FbMetadata.endMetadata(b), METADATA_IDENTIFIER);
  return b.asUint8Array();
}

/** A descriptor with only the fields a blob type uses given; the rest stored at their defaults. */
export function encodeDescriptorOf(d: Partial<RawDescriptor>): Uint8Array {
  return encodeDescriptor({
    name: d.name ?? '',
    executable: d.executable ?? '',
    tensorInfo: d.tensorInfo,
    sampleCount: d.sampleCount ?? 0n,
    uncompressedSize: d.uncompressedSize ?? 0n,
  });
}

export function encodeDescriptor(d: RawDescriptor): Uint8Array {
  const b = new Builder(128);
  // Every field is stored even at its default, so a descriptor's length
  // depends only on its strings and tensor info: the writer encodes a
  // placeholder before streaming and the final value after, in place.
  b.forceDefaults(true);
  const name = b.createString(d.name);
  const executable = b.createString(d.executable);
  const info = d.tensorInfo === undefined ? 0 : tensorInfo(b, d.tensorInfo);
  FbBlobDescriptor.startBlobDescriptor(b);
  FbBlobDescriptor.addName(b, name);
  FbBlobDescriptor.addExecutable(b, executable);
  if (info !== 0) FbBlobDescriptor.addTensorInfo(b, info);
  FbBlobDescriptor.addSampleCount(b, d.sampleCount);
  FbBlobDescriptor.addUncompressedSize(b, d.uncompressedSize);
  b.finish(FbBlobDescriptor.endBlobDescriptor(b), DESCRIPTOR_IDENTIFIER);
  return b.asUint8Array();
}
