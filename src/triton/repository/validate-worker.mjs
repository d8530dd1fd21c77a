// validate's worker thread when validate runs from the TypeScript sources
// under tsx, as the tests do (model-pool.ts starts it then): a worker does
// not get its parent's tsx loader on Node 20, so it registers it before it
// loads the worker. The library's build and the CLI's bundle start their
// compiled worker directly, and neither ships this file.
import { register } from 'tsx/esm/api';

register();
await import('./validate-worker.ts');
