/** Prints the service's OpenAPI document (every optional route tree enabled) to stdout or a file. */
import { writeFile } from 'node:fs/promises';
import { openApiDocument } from './client-generate.js';

const doc = await openApiDocument();
const out = process.argv[2];
if (out) await writeFile(out, JSON.stringify(doc, null, 2));
else process.stdout.write(JSON.stringify(doc, null, 2));
process.exit(0);
