#!/usr/bin/env node
/**
 * Copies the curl examples of the README and the docs pages (EXAMPLE_PAGES) into
 * src/openapi/readme-examples.ts, which the OpenAPI document attaches to its operations. Run after
 * changing a curl example (`npm run readme:examples`); test/integration/openapi.test.ts fails while
 * the copy is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { curlExamples, EXAMPLE_PAGES, readmeExamplesModule } from './readme-curls.mjs';

const root = new URL('..', import.meta.url);
const pages = EXAMPLE_PAGES.map((page) => ({ page, markdown: readFileSync(new URL(page, root), 'utf8') }));
writeFileSync(new URL('src/openapi/readme-examples.ts', root), readmeExamplesModule(pages));
console.log(`${curlExamples(pages).length} curl examples written to src/openapi/readme-examples.ts`);
