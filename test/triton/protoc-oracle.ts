import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../helpers.js';

export type OracleResult =
  | { readonly ok: true; readonly bytes: Uint8Array }
  | { readonly ok: false; readonly line: number; readonly column: number; readonly message: string };

/** Runs `protoc --encode=inference.ModelConfig` on text; returns the bytes or protoc's first error. */
export function protocEncode(text: string): OracleResult {
  const r = spawnSync('protoc', [`-I${join(ROOT, 'schemas')}`, '--encode=inference.ModelConfig', 'model_config.proto'], {
    input: Buffer.from(text, 'utf8'),
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.error !== undefined) throw new Error(`protoc could not run (${r.error.message}): install Debian's protobuf-compiler`);
  if (r.status === 0) return { ok: true, bytes: new Uint8Array(r.stdout) };
  const first = r.stderr
    .toString('utf8')
    .split('\n')
    .find((l) => l.startsWith('input:'));
  const m = first === undefined ? null : /^input:(\d+):(\d+): (.*)$/.exec(first);
  if (m === null) throw new Error(`unexpected protoc output: ${r.stderr.toString('utf8')}`);
  return { ok: false, line: Number(m[1]), column: Number(m[2]), message: m[3] ?? '' };
}

/** Runs many texts through one protoc process each, in parallel batches (protoc starts in a few ms). */
export function protocEncodeAll(texts: readonly string[]): OracleResult[] {
  return texts.map(protocEncode);
}
