// What require('popef-toolkit') gets: the package is ES modules only, and
// this says so (instead of Node's bare ERR_PACKAGE_PATH_NOT_EXPORTED).
'use strict';
const error = new Error(
  "popef-toolkit is an ES module package and cannot be loaded with require(): use `import { ModelSet } from 'popef-toolkit'` in an ES module, or `const toolkit = await import('popef-toolkit')` from CommonJS",
);
error.code = 'ERR_REQUIRE_ESM';
throw error;
