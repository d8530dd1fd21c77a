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
  it('lists every limit of the reader in section 12, at its value', () => {
    const limits = section(12);
    for (const [name, value] of Object.entries(Limits)) {
      if (name === 'maxTableDepth') {
        assert.match(limits, new RegExp(`\\| table nesting \\| ${value} \\|`));
        continue;
      }
      assert.ok(written(value).some((form) => limits.includes(`| ${form} |`)), `Limits.${name} (${value}) is not in section 12`);
    }
  });

  it('lists every error code a PopEF file can raise in section 13', () => {
    const codes = section(13);
    const formatCodes = [ErrorCode.NotPopef, ErrorCode.Truncated, ErrorCode.BadStructure, ErrorCode.UnsupportedVersion, ErrorCode.LimitExceeded, ErrorCode.BadFlatBuffer, ErrorCode.Checksum, ErrorCode.Compression, ErrorCode.Model];
    for (const code of formatCodes) assert.ok(codes.includes(`| \`${code}\` |`), `${code} is not in section 13`);
    for (const warning of ['W_NEWER_MINOR_VERSION', 'W_UNKNOWN_BLOB_TYPE']) assert.ok(codes.includes(`| \`${warning}\` |`), `${warning} is not in section 13`);
  });

  it('states one rule for unknown enum codes, in the schema and the spec', async () => {
    const fbs = await readFile(join(ROOT, 'schemas/popef.fbs'), 'utf8');
    assert.match(fbs, /enum values are only appended, each in a new minor version\s*\n\/\/ \(a reader refuses a code it does not know/);
    assert.match(section(9), /A reader refuses a code it does not know/);
  });
});
