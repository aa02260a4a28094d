#!/usr/bin/env node
/**
 * Copies Swagger UI's browser files from the swagger-ui-dist package into public/docs/vendor/,
 * where Workers Static Assets serve them to GET /docs: nothing is loaded from a CDN, so the page
 * works with no internet. `npm run dev`, `npm run bench`, `npm test` and `npm run deploy` run it
 * first (wrangler refuses to start while the assets folder is missing).
 */
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const FILES = ['swagger-ui-bundle.js', 'swagger-ui.css', 'LICENSE', 'NOTICE'];

export function copyDocsAssets() {
  const require = createRequire(import.meta.url);
  const dist = dirname(require.resolve('swagger-ui-dist/package.json'));
  const target = new URL('../public/docs/vendor/', import.meta.url);
  mkdirSync(target, { recursive: true });
  for (const file of FILES) copyFileSync(join(dist, file), new URL(file, target));
  return JSON.parse(readFileSync(join(dist, 'package.json'), 'utf8')).version;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const version = copyDocsAssets();
  if (!process.argv.includes('--quiet')) console.log(`swagger-ui-dist ${version} copied to public/docs/vendor/`);
}
