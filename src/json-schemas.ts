import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as AjvModule from 'ajv';
import type { ValidateFunction } from 'ajv';
import { errorLines } from './json-schema-lines.js';

/**
 * The JSON Schemas in schemas/, compiled once with ajv. Errors come back as
 * one "JSON-pointer: message" line each, the form the CLI prints.
 */

export type SchemaName = 'manifest' | 'dump' | 'name-map' | 'validate' | 'sarif-2.1.0-subset' | 'diff' | 'doctor';

const compiled = new Map<SchemaName, ValidateFunction>();

// ajv is loaded by the first validation, not with this module: its sixty
// files were a measurable part of the start of every command that merely
// might validate something (config, scaffold, validate, run).
const requireHere = createRequire(import.meta.url);

/** Where the schemas live: schemas/ at the package root, from src/ and dist/ alike. */
export function schemaUrl(name: string): URL {
  return new URL(`../schemas/${name}.schema.json`, import.meta.url);
}

function validator(name: SchemaName): ValidateFunction {
  let v = compiled.get(name);
  if (v === undefined) {
    const { Ajv } = requireHere('ajv') as typeof AjvModule;
    const ajv = new Ajv({ allErrors: true, strict: true, strictTypes: false });
    v = ajv.compile(JSON.parse(readFileSync(schemaUrl(name), 'utf8')) as object);
    compiled.set(name, v);
  }
  return v;
}

/** Validates `value`; returns [] when valid, else one line per problem (if/then noise removed). */
export function schemaErrors(name: SchemaName, value: unknown): string[] {
  return errorLines(validator(name), value);
}
