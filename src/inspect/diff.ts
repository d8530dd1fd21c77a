import { ErrorCode, PopefError } from '../errors.js';
import { BlobType, Codec } from '../format/constants.js';
import { crc32 } from '../io/platform.js';
import { hex } from '../format/header.js';
import type { Blob } from '../format/blob.js';
import type { ModelSet } from '../format/model-set.js';
import { sizeInBytes, type Anchor, type Metadata } from '../schema/model.js';
import { codecName, toSize, type Size } from './report.js';

/**
 * A semantic comparison of two model sets: anchors, metadata and the blob
 * inventory. Nothing is decompressed or read beyond headers and metadata:
 * executables and other payloads are compared by their stored checksums.
 */

export interface Change {
  readonly change: 'added' | 'removed' | 'changed';
  /** What changed: `model "x"`, `anchor "input" (INPUT)`, `metadata`, `blob DATA_TENSOR "w"`. */
  readonly subject: string;
  /** The field that changed, for `changed` (e.g. dtype, shape, crc32, deviceIterations). */
  readonly field?: string;
  /** `anchor`, `metadata`, `model` or the blob type: with `field`, what --ignore matches. */
  readonly scope: string;
  readonly before?: unknown;
  readonly after?: unknown;
}

/**
 * A blob matched on both sides whose stored bytes differ (size, crc32,
 * compression) but that holds the same bytes once inflated: a compressed
 * and an uncompressed copy of one executable.
 */
export interface SameContent {
  readonly subject: string;
  /** How many bytes it holds, inflated. */
  readonly bytes: Size;
  /** The CRC-32 of those bytes. */
  readonly crc32: string;
  /** How each side stores them: none, zlib. */
  readonly compression: { readonly a: string; readonly b: string };
}

export interface DiffReport {
  readonly tool: 'popef-toolkit';
  readonly reportVersion: 1;
  readonly a: readonly string[];
  readonly b: readonly string[];
  readonly identical: boolean;
  readonly changes: readonly Change[];
  /** Ignored fields, as given. */
  readonly ignored: readonly string[];
  /** Set by diffModelSetsReadingPayloads: the blobs among the changes that hold the same bytes on both sides. */
  readonly sameContent?: readonly SameContent[];
}

const json = (v: unknown): string => JSON.stringify(v);

function anchorKey(a: Anchor): string {
  return `${a.name}\u0000${a.type}`;
}

const ANCHOR_FIELDS = ['dtype', 'shape', 'sizeInBytes', 'handle', 'programs', 'isPerReplica'] as const;

function anchorValue(a: Anchor, field: (typeof ANCHOR_FIELDS)[number]): unknown {
  switch (field) {
    case 'dtype':
      return a.tensorInfo.dtype;
    case 'shape':
      return a.tensorInfo.shape;
    case 'sizeInBytes':
      return toSize(sizeInBytes(a.tensorInfo));
    case 'handle':
      return a.handle;
    case 'programs':
      return a.programs;
    case 'isPerReplica':
      return a.isPerReplica;
  }
}

const METADATA_FIELDS = [
  'replicationFactor',
  'numIpus',
  'ipuVersion',
  'isPOD',
  'numProcesses',
  'isInference',
  'deviceIterations',
  'seedHandle',
  'programFlow',
  'programsMap',
  'engineOptions',
  'deviceOptions',
] as const;

function diffMetadata(a: Metadata, b: Metadata, model: string, out: Change[]): void {
  for (const field of METADATA_FIELDS) {
    if (json(a[field]) !== json(b[field]))
      out.push({ change: 'changed', subject: `${model} metadata`, scope: 'metadata', field, before: a[field], after: b[field] });
  }
  const before = new Map(a.anchors.map((x) => [anchorKey(x), x]));
  const after = new Map(b.anchors.map((x) => [anchorKey(x), x]));
  const label = (x: Anchor): string => `${model} anchor "${x.name}" (${x.type})`;
  for (const [key, x] of before) {
    const y = after.get(key);
    if (y === undefined) {
      out.push({ change: 'removed', subject: label(x), scope: 'anchor', before: { dtype: x.tensorInfo.dtype, shape: x.tensorInfo.shape } });
      continue;
    }
    for (const field of ANCHOR_FIELDS) {
      const v = anchorValue(x, field);
      const w = anchorValue(y, field);
      if (json(v) !== json(w)) out.push({ change: 'changed', subject: label(x), scope: 'anchor', field, before: v, after: w });
    }
  }
  for (const [key, y] of after) {
    if (!before.has(key))
      out.push({ change: 'added', subject: label(y), scope: 'anchor', after: { dtype: y.tensorInfo.dtype, shape: y.tensorInfo.shape } });
  }
}

interface BlobSummary {
  readonly key: string;
  readonly type: string;
  readonly label: string;
  readonly fields: Readonly<Record<string, Size | string | number | null>>;
}

function blobSummary(b: Blob, metadataOwner: ReadonlyMap<Blob, string>): BlobSummary {
  const name = b.kind === 'metadata' ? (metadataOwner.get(b) ?? '') : b.kind === 'unknown' ? `#${b.index}` : b.name;
  const owner = b.kind === 'opaque' ? ` -> "${b.executable}"` : b.kind === 'metadata' ? ' (metadata)' : '';
  return {
    key: `${b.type}\u0000${b.typeCode}\u0000${name}\u0000${b.kind === 'opaque' ? b.executable : ''}`,
    type: b.type,
    label: `blob ${b.type} "${name}"${owner}`,
    fields: {
      size: b.payloadLength,
      crc32: hex(b.payloadCrc),
      compression: codecName(b.codec),
      uncompressedSize: b.kind === 'executable' ? b.uncompressedSize : null,
      tensorInfo: b.kind === 'tensor' || b.kind === 'feed' ? json(b.tensorInfo) : null,
    },
  };
}

/** Matches the models of both sides: by executable name, or one to one when each side has a single model. */
function pairModels(a: ModelSet, b: ModelSet): { pairs: [string, string][]; removed: string[]; added: string[] } {
  const an = a.models.map((m) => m.name);
  const bn = b.models.map((m) => m.name);
  if (an.length === 1 && bn.length === 1) return { pairs: [[an[0] ?? '', bn[0] ?? '']], removed: [], added: [] };
  return {
    pairs: an.filter((n) => bn.includes(n)).map((n) => [n, n]),
    removed: an.filter((n) => !bn.includes(n)),
    added: bn.filter((n) => !an.includes(n)),
  };
}

const BLOB_FIELDS = ['size', 'crc32', 'compression', 'uncompressedSize', 'tensorInfo'] as const;

/** Every --ignore a difference can match: scopes, fields and scope.field pairs. */
export function ignorableSpecs(): Set<string> {
  const scoped: [string, readonly string[]][] = [
    ['anchor', ANCHOR_FIELDS],
    ['metadata', METADATA_FIELDS],
    ['model', ['executable']],
    ...Object.keys(BlobType).map((t): [string, readonly string[]] => [t, BLOB_FIELDS]),
    // A blob whose type code this reader does not know.
    ['UNKNOWN', BLOB_FIELDS],
  ];
  const out = new Set<string>();
  for (const [scope, fields] of scoped) {
    out.add(scope);
    for (const f of fields) {
      out.add(f);
      out.add(`${scope}.${f}`);
    }
  }
  return out;
}

/** Refuses an --ignore that no difference could ever match (a typo would silently ignore nothing). */
export function checkIgnore(specs: readonly string[]): void {
  const known = ignorableSpecs();
  const bad = specs.filter((s) => !known.has(s));
  if (bad.length > 0) {
    const fields = [...new Set([...ANCHOR_FIELDS, ...METADATA_FIELDS, ...BLOB_FIELDS, 'executable'])].join(', ');
    throw new PopefError(ErrorCode.InvalidInput, `--ignore ${bad.map((b) => `"${b}"`).join(', ')} matches no difference popef diff reports`, {
      suggestion: `give a scope (anchor, metadata, model, ${Object.keys(BlobType).join(', ')}), a field (${fields}) or scope.field`,
    });
  }
}

/** Does --ignore `spec` cover a change? `field`, `scope.field` or a whole scope. */
function ignoredBy(change: Change, ignore: readonly string[]): boolean {
  return ignore.some((spec) => spec === change.field || spec === change.scope || spec === `${change.scope}.${change.field ?? ''}`);
}

/** Blobs matched on the two sides, with the label the report gives them. */
interface MatchedBlob {
  readonly label: string;
  readonly a: Blob;
  readonly b: Blob;
}

export function diffModelSets(a: ModelSet, b: ModelSet, options: { ignore?: readonly string[] } = {}): DiffReport {
  return compareModelSets(a, b, options).report;
}

/**
 * diffModelSets, and then, for each executable whose stored bytes differ
 * while both sides inflate to the same length (one compressed and one not,
 * or compressed differently), the inflated bytes' CRC-32 compared: those
 * equal are listed in `sameContent` (absent when there are none). This
 * reads and inflates those payloads (streamed, chunk by chunk), nothing
 * else.
 */
export async function diffModelSetsReadingPayloads(a: ModelSet, b: ModelSet, options: { ignore?: readonly string[] } = {}): Promise<DiffReport> {
  const { report, matched } = compareModelSets(a, b, options);
  const sameContent: SameContent[] = [];
  const changed = new Set(report.changes.map((c) => c.subject));
  for (const m of matched) {
    if (m.a.kind !== 'executable' || m.b.kind !== 'executable' || !changed.has(m.label)) continue;
    const stored = (x: Blob): string => `${x.codec}:${x.payloadLength}:${x.payloadCrc}`;
    if (stored(m.a) === stored(m.b) || m.a.uncompressedSize !== m.b.uncompressedSize) continue;
    if (m.a.codec === Codec.NONE && m.b.codec === Codec.NONE) continue;
    const crc = await contentCrc(a, m.a);
    if (crc !== (await contentCrc(b, m.b))) continue;
    sameContent.push({
      subject: m.label,
      bytes: toSize(m.a.uncompressedSize),
      crc32: hex(crc),
      compression: { a: codecName(m.a.codec), b: codecName(m.b.codec) },
    });
  }
  return sameContent.length === 0 ? report : { ...report, sameContent };
}

/** The CRC-32 of what a blob holds: its stored checksum when it is not compressed, else that of its inflated bytes. */
async function contentCrc(set: ModelSet, blob: Blob): Promise<number> {
  if (blob.codec === Codec.NONE) return blob.payloadCrc;
  let crc = 0;
  for await (const chunk of set.fileOf(blob).payloadChunks(blob)) crc = crc32(chunk, crc);
  return crc;
}

function compareModelSets(a: ModelSet, b: ModelSet, options: { ignore?: readonly string[] }): { report: DiffReport; matched: MatchedBlob[] } {
  const changes: Change[] = [];
  const { pairs, removed, added } = pairModels(a, b);
  for (const name of removed) changes.push({ change: 'removed', subject: `model "${name}"`, scope: 'model' });
  for (const name of added) changes.push({ change: 'added', subject: `model "${name}"`, scope: 'model' });
  const ownerA = new Map<Blob, string>();
  const ownerB = new Map<Blob, string>();
  for (const [x, y] of pairs) {
    const ma = a.model(x);
    const mb = b.model(y);
    const label = x === y ? `model "${x}"` : `model "${x}" -> "${y}"`;
    if (x !== y) changes.push({ change: 'changed', subject: label, scope: 'model', field: 'executable', before: x, after: y });
    if (ma.metadataBlob !== undefined) ownerA.set(ma.metadataBlob, y);
    if (mb.metadataBlob !== undefined) ownerB.set(mb.metadataBlob, y);
    if (ma.metadata !== undefined && mb.metadata !== undefined) diffMetadata(ma.metadata, mb.metadata, label, changes);
    else if ((ma.metadata === undefined) !== (mb.metadata === undefined)) {
      changes.push({ change: ma.metadata === undefined ? 'added' : 'removed', subject: `${label} metadata`, scope: 'metadata' });
    }
  }
  // Executables of paired models are the same blob under two names: key them by the b-side name.
  const renamed = new Map(pairs.filter(([x, y]) => x !== y));
  const blobsA = a.blobs.map((bl) => {
    const s = blobSummary(bl, ownerA);
    if (bl.kind === 'executable' && renamed.has(bl.name)) return { ...s, key: s.key.replace(bl.name, renamed.get(bl.name) ?? bl.name) };
    if (bl.kind === 'opaque' && renamed.has(bl.executable))
      return { ...s, key: s.key.replace(bl.executable, renamed.get(bl.executable) ?? bl.executable) };
    return s;
  });
  const blobsB = b.blobs.map((bl) => blobSummary(bl, ownerB));
  const byKeyB = new Map(blobsB.map((s, i) => [s.key, { ...s, blob: b.blobs[i] }]));
  const keysA = new Set(blobsA.map((s) => s.key));
  const matched: MatchedBlob[] = [];
  for (const [i, s] of blobsA.entries()) {
    const t = byKeyB.get(s.key);
    if (t === undefined) {
      changes.push({ change: 'removed', subject: s.label, scope: s.type, before: s.fields.size });
      continue;
    }
    const blobA = a.blobs[i];
    if (blobA !== undefined && t.blob !== undefined) matched.push({ label: t.label, a: blobA, b: t.blob });
    for (const [field, v] of Object.entries(s.fields)) {
      const w = t.fields[field];
      if (json(v) !== json(w)) changes.push({ change: 'changed', subject: t.label, scope: s.type, field, before: v, after: w });
    }
  }
  for (const t of blobsB) if (!keysA.has(t.key)) changes.push({ change: 'added', subject: t.label, scope: t.type, after: t.fields.size });
  const ignore = options.ignore ?? [];
  checkIgnore(ignore);
  const kept = changes.filter((c) => !ignoredBy(c, ignore));
  return {
    report: {
      tool: 'popef-toolkit',
      reportVersion: 1,
      a: a.files.map((f) => f.name),
      b: b.files.map((f) => f.name),
      identical: kept.length === 0,
      changes: kept,
      ignored: ignore,
    },
    matched,
  };
}
