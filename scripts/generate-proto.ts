// Writes schemas/model_config.proto from the schema table (src/triton/schema.ts).
import { writeFileSync } from 'node:fs';
import { renderProto } from '../src/triton/proto-source.js';

writeFileSync(new URL('../schemas/model_config.proto', import.meta.url), renderProto());
