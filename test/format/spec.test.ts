import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Limits } from '../../src/format/constants.js';
import { ErrorCode } from '../../src/errors.js';
import { ROOT } from '../helpers.js';

/** FORMAT.md must say everything the reader checks: every limit, every error code the format layer raises. */

const spec = await readFile(join(ROOT, 'schemas/FORMAT.md'), 'utf8');
const section = (n: number): string => {
  const start = spec.indexOf(`\n## ${n}. `);
  const end = spec.indexOf('\n## ', start + 1);
  assert.ok(start !== -1, `FORMAT.md has no section ${n}`);
  return spec.slice(start, end === -1 ? undefined : end);
};

function written(value: number): string[] {
  const forms = [value.toLocaleString('en-US')];
  if (value >= 1024 * 1024 && value % (1024 * 1024) === 0) forms.push(`${value / (1024 * 1024)} MiB`);
  return forms;
}

describe('FORMAT.md and the reader', () => {
  it('lists every limit of the reader in section 12, each in its own row, at its value', () => {
    const rows = section(12)
      .split('\n')
      .filter((line) => line.startsWith('| '));
    // Each limit's row in the table, by the words it starts with: a limit without a row here fails, as does a row that states another value.
    const rowOf: Record<keyof typeof Limits, string> = {
      maxBlobsPerFile: 'blobs in one file',
      maxDescriptorBytes: '`descriptor_length`',
      maxMetadataBytes: 'metadata payload',
      maxAnchors: 'anchors per metadata',
      maxRank: 'tensor rank',
      maxPrograms: 'programs per list',
      maxOptions: 'options per list',
      maxStringBytes: 'bytes of one FlatBuffers string',
      maxTableDepth: 'table nesting',
    };
    for (const [name, value] of Object.entries(Limits) as [keyof typeof Limits, number][]) {
      const label = rowOf[name] as string | undefined;
      assert.ok(label !== undefined, `Limits.${name} has no row in FORMAT.md section 12 (and none in this test)`);
      const row = rows.find((r) => r.startsWith(`| ${label}`));
      assert.ok(row !== undefined, `FORMAT.md section 12 has no row "${label}" for Limits.${name}`);
      assert.ok(
        written(value).some((form) => row.includes(`| ${form} |`)),
        `Limits.${name} is ${value}, but its row says: ${row}`,
      );
    }
  });

  it('lists every error code a PopEF file can raise in section 13', () => {
    const codes = section(13);
    const formatCodes = [
      ErrorCode.NotPopef,
      ErrorCode.Truncated,
      ErrorCode.BadStructure,
      ErrorCode.UnsupportedVersion,
      ErrorCode.LimitExceeded,
      ErrorCode.BadFlatBuffer,
      ErrorCode.Checksum,
      ErrorCode.Compression,
      ErrorCode.Model,
    ];
    for (const code of formatCodes) assert.ok(codes.includes(`| \`${code}\` |`), `${code} is not in section 13`);
    for (const warning of ['W_NEWER_MINOR_VERSION', 'W_UNKNOWN_BLOB_TYPE'])
      assert.ok(codes.includes(`| \`${warning}\` |`), `${warning} is not in section 13`);
  });

  it('states one rule for unknown enum codes, in the schema and the spec', async () => {
    const fbs = await readFile(join(ROOT, 'schemas/popef.fbs'), 'utf8');
    assert.match(fbs, /enum values are only appended, each in a new minor version\s*\n\/\/ \(a reader refuses a code it does not know/);
    assert.match(section(9), /A reader refuses a code it does not know/);
  });
});
