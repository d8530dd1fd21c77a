import type { ErrorObject, ValidateFunction } from 'ajv';

/** One "JSON-pointer: message" line per problem, as the CLI prints them, shared by Node's and the page's schema loaders. */
export function errorLines(v: ValidateFunction, value: unknown): string[] {
  if (v(value)) return [];
  const lines = (v.errors ?? []).filter((e) => e.keyword !== 'if').map(describe);
  return [...new Set(lines)];
}

function describe(e: ErrorObject): string {
  const where = e.instancePath === '' ? '/' : e.instancePath;
  const params = e.params as Record<string, unknown>;
  let message = e.message ?? 'is invalid';
  if (e.keyword === 'enum' && Array.isArray(params.allowedValues)) message += ` (${params.allowedValues.map(String).join(', ')})`;
  if (e.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string')
    message = `has unknown property "${params.additionalProperty}"`;
  return `${where}: ${message}`;
}
