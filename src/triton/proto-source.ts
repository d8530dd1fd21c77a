import { ENUMS, MESSAGES, type FieldSpec } from './schema.js';

/**
 * Renders the schema table as a proto3 file (schemas/model_config.proto), so
 * that protoc can act as an independent oracle for the text-format parser in
 * the tests. Nested messages and enums are emitted inside their parents, so
 * protoc's messages name the same types Triton's would.
 */
export function renderProto(): string {
  const out: string[] = [
    '// Generated from src/triton/schema.ts by scripts/generate-proto.ts; do not edit.',
    "// popef-toolkit's own description of Triton's ModelConfig (package inference),",
    '// used as the oracle in the parser tests: `protoc --encode=inference.ModelConfig`.',
    'syntax = "proto3";',
    '',
    'package inference;',
    '',
  ];
  const messageNames = Object.keys(MESSAGES);
  const enumNames = Object.keys(ENUMS);
  const childrenOf = (parent: string, names: string[]): string[] =>
    names.filter((n) => n.startsWith(`${parent}.`) && !n.slice(parent.length + 1).includes('.'));

  const renderEnum = (full: string, indent: string): void => {
    const short = full.slice(full.lastIndexOf('.') + 1);
    out.push(`${indent}enum ${short} {`);
    (ENUMS as Record<string, readonly string[]>)[full]?.forEach((v, i) => out.push(`${indent}  ${v} = ${i};`));
    out.push(`${indent}}`);
  };
  const typeRef = (t: string): string => (t in MESSAGES || t in ENUMS ? `.${t}` : t);
  const fieldLine = (name: string, f: FieldSpec): string => {
    if (f.map !== undefined) return `map<${f.map}, ${typeRef(f.t)}> ${name} = ${f.n};`;
    return `${f.repeated === true ? 'repeated ' : ''}${typeRef(f.t)} ${name} = ${f.n};`;
  };
  const renderMessage = (full: string, indent: string): void => {
    const short = full.slice(full.lastIndexOf('.') + 1);
    out.push(`${indent}message ${short} {`);
    for (const e of childrenOf(full, enumNames)) renderEnum(e, `${indent}  `);
    for (const m of childrenOf(full, messageNames)) renderMessage(m, `${indent}  `);
    const fields = Object.entries((MESSAGES as Record<string, Record<string, FieldSpec>>)[full] ?? {});
    const doneOneofs = new Set<string>();
    for (const [name, f] of fields) {
      if (f.oneof === undefined) {
        out.push(`${indent}  ${fieldLine(name, f)}`);
      } else if (!doneOneofs.has(f.oneof)) {
        doneOneofs.add(f.oneof);
        out.push(`${indent}  oneof ${f.oneof} {`);
        for (const [member, g] of fields) if (g.oneof === f.oneof) out.push(`${indent}    ${fieldLine(member, g)}`);
        out.push(`${indent}  }`);
      }
    }
    out.push(`${indent}}`);
  };
  for (const e of childrenOf('inference', enumNames)) {
    renderEnum(e, '');
    out.push('');
  }
  for (const m of childrenOf('inference', messageNames)) {
    renderMessage(m, '');
    out.push('');
  }
  return `${out.join('\n').trimEnd()}\n`;
}
