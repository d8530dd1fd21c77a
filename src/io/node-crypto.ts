import { createRequire } from 'node:module';
import type * as NodeCrypto from 'node:crypto';

/**
 * node:crypto, loaded on first use rather than with the modules that may
 * need it. Loading it brings some twenty of Node's internal modules with it:
 * measured, about 5 ms of the 22 ms that `popef validate` of one model
 * added to Node's own start, in a run that hashes nothing and writes no
 * temporary file (issue 26 asks that the one-model case start small).
 */
let loaded: typeof NodeCrypto | undefined;

export function nodeCrypto(): typeof NodeCrypto {
  loaded ??= createRequire(import.meta.url)('node:crypto') as typeof NodeCrypto;
  return loaded;
}
