import { Ajv, type ValidateFunction } from 'ajv';
import { errorLines } from './json-schema-lines.js';
import diff from '../schemas/diff.schema.json' with { type: 'json' };
import doctor from '../schemas/doctor.schema.json' with { type: 'json' };
import dump from '../schemas/dump.schema.json' with { type: 'json' };
import manifest from '../schemas/manifest.schema.json' with { type: 'json' };
import nameMap from '../schemas/name-map.schema.json' with { type: 'json' };
import popefDescription from '../schemas/popef-description.schema.json' with { type: 'json' };
import run from '../schemas/run.schema.json' with { type: 'json' };
import sarif from '../schemas/sarif-2.1.0-subset.schema.json' with { type: 'json' };
import validate from '../schemas/validate.schema.json' with { type: 'json' };
import type { SchemaName } from './json-schemas.js';

/**
 * json-schemas.ts for the viewer page: the same schemas and messages, with
 * the schema files bundled instead of read from disk. The page's bundle
 * (scripts/build.mjs) uses this file in place of json-schemas.ts. Every
 * schema is in the bundle, with ajv and its compiler: the table below keeps
 * them all reachable, so tree shaking cannot drop one the page never uses.
 */

const SCHEMAS: Record<SchemaName, object> = {
  diff,
  doctor,
  dump,
  manifest,
  'name-map': nameMap,
  'popef-description': popefDescription,
  run,
  'sarif-2.1.0-subset': sarif,
  validate,
};

const compiled = new Map<SchemaName, ValidateFunction>();

function validator(name: SchemaName): ValidateFunction {
  let v = compiled.get(name);
  if (v === undefined) {
    const ajv = new Ajv({ allErrors: true, strict: true, strictTypes: false });
    // The description's models are dump's (a $ref into dump.schema.json).
    if (name === 'popef-description') ajv.addSchema(dump);
    v = ajv.compile(SCHEMAS[name]);
    compiled.set(name, v);
  }
  return v;
}

export function schemaErrors(name: SchemaName, value: unknown): string[] {
  return errorLines(validator(name), value);
}
