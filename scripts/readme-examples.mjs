#!/usr/bin/env node
/**
 * Copies the README's curl examples into src/openapi/readme-examples.ts, which the OpenAPI
 * document attaches to its operations. Run after changing a curl example in the README
 * (`npm run readme:examples`); test/integration/openapi.test.ts fails while the copy is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { curlExamples, readmeExamplesModule } from './readme-curls.mjs';

const root = new URL('..', import.meta.url);
const markdown = readFileSync(new URL('README.md', root), 'utf8');
writeFileSync(new URL('src/openapi/readme-examples.ts', root), readmeExamplesModule(markdown));
console.log(`${curlExamples(markdown).length} curl examples written to src/openapi/readme-examples.ts`);
