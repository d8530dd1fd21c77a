// The library's public surface: every name src/index.ts exports, with its
// kind, pinned in test/golden/api/exports.txt. Adding, renaming or removing
// an export is an API change: it shows up here as a golden diff to review
// (UPDATE_GOLDEN=1), and dist/api (npm run docs:api) documents it.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';
import * as api from '../src/index.js';
import { ROOT, matchGolden } from './helpers.js';

const nameOf = (line: string): string => line.slice(line.indexOf(' ') + 1);

/** Every export of src/index.ts as "kind name", sorted: value (function, class, const) or type. */
function exportedNames(): string[] {
  const entry = join(ROOT, 'src/index.ts');
  const program = ts.createProgram([entry], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(entry);
  assert.ok(source);
  const module = checker.getSymbolAtLocation(source);
  assert.ok(module);
  return checker
    .getExportsOfModule(module)
    .map((symbol) => {
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      const kind =
        target.flags & ts.SymbolFlags.Class
          ? 'class'
          : target.flags & ts.SymbolFlags.Function
            ? 'function'
            : target.flags & ts.SymbolFlags.Value
              ? 'const'
              : 'type';
      return `${kind} ${symbol.name}`;
    })
    .sort((a, b) => nameOf(a).localeCompare(nameOf(b)));
}

describe('the public API (src/index.ts)', () => {
  const names = exportedNames();

  it('exports exactly the names in test/golden/api/exports.txt', async () => {
    await matchGolden('api', 'exports.txt', `${names.join('\n')}\n`);
  });

  it('the values the module really exports are the value names the checker sees', () => {
    const values = names.filter((n) => !n.startsWith('type ')).map(nameOf);
    assert.deepEqual(Object.keys(api).sort(), [...values].sort());
  });
});
