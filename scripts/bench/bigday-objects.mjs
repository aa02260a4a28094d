// The bigday bench's view of storage: every Durable Object the run made, found by listing the local
// state's SQLite files by class (so it sizes whatever objects the code makes, under whatever names:
// sub-shards, search parts), and the rows each object wrote (counted by scripts/bench/bigday-entry.mjs).
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { post } from './scenarios/largest.mjs';

/** wrangler.toml's Durable Object bindings: class name → binding name. */
export function doBindings(root) {
  const text = readFileSync(join(root, 'wrangler.toml'), 'utf8');
  const bindings = {};
  for (const m of text.matchAll(/name\s*=\s*"([A-Z0-9_]+)"\s*\n\s*class_name\s*=\s*"([A-Za-z0-9_]+)"/g)) bindings[m[2]] = m[1];
  return bindings;
}

const fileBytes = (path) => {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
};

/** Every object's SQLite file under the state: { class, hex, fileBytes } (the file and its WAL). */
export function listObjectFiles(persistTo) {
  const base = join(persistTo, 'v3', 'do');
  const found = [];
  let dirs = [];
  try {
    dirs = readdirSync(base);
  } catch {
    return found;
  }
  for (const dir of dirs) {
    // Miniflare's folder per namespace: "{script}-{ClassName}"; one "{id hex}.sqlite" per object.
    const className = dir.slice(dir.lastIndexOf('-') + 1);
    for (const file of readdirSync(join(base, dir))) {
      const m = /^([0-9a-f]{64})\.sqlite$/.exec(file);
      if (m) found.push({ class: className, hex: m[1], fileBytes: fileBytes(join(base, dir, file)) + fileBytes(join(base, dir, `${file}-wal`)) });
    }
  }
  return found;
}

/**
 * Per class: how many objects, their bytes in all, and the `top` largest by file size with their
 * names and exact SQLite sizes (asked of the objects themselves; a class with thousands of small
 * objects, one per card, is not woken whole).
 */
export async function sizeObjects(ctx, { root, persistTo, top = 12, only = null }) {
  const bindings = doBindings(root);
  const byClass = new Map();
  for (const f of listObjectFiles(persistTo)) {
    if (only && !only.includes(f.class)) continue;
    if (!byClass.has(f.class)) byClass.set(f.class, []);
    byClass.get(f.class).push(f);
  }
  const classes = [];
  for (const [className, files] of byClass) {
    files.sort((a, b) => b.fileBytes - a.fileBytes);
    const sized = [];
    for (const f of files.slice(0, top)) {
      let answer = { name: null, bytes: f.fileBytes };
      if (bindings[className]) {
        try {
          answer = await post(ctx, '/__bench/bigday/object', { binding: bindings[className], hex: f.hex });
        } catch (error) {
          answer = { name: null, bytes: f.fileBytes, error: error.message.slice(0, 200) };
        }
      }
      sized.push({ class: className, ...answer });
    }
    sized.sort((a, b) => b.bytes - a.bytes);
    classes.push({ class: className, objects: files.length, totalFileBytes: files.reduce((n, f) => n + f.fileBytes, 0), largest: sized });
  }
  classes.sort((a, b) => (b.largest[0]?.bytes ?? 0) - (a.largest[0]?.bytes ?? 0));
  return classes;
}

/** The rows written so far: { objects: [{ class, name, rowsWritten }], d1: { rowsWritten, statements } }. */
export const rowsWrittenNow = (ctx) => post(ctx, '/__bench/bigday/rows-written', {});

/** Rows written between two snapshots by objects whose name `match`es, per class, and D1's. */
export function rowsWrittenBetween(before, after, match) {
  const was = new Map(before.objects.map((o) => [`${o.class} ${o.name}`, o.rowsWritten]));
  const perClass = {};
  for (const o of after.objects) {
    if (!match(o.name)) continue;
    const delta = o.rowsWritten - (was.get(`${o.class} ${o.name}`) ?? 0);
    if (delta > 0) perClass[o.class] = (perClass[o.class] ?? 0) + delta;
  }
  return { perClass, d1: after.d1.rowsWritten - before.d1.rowsWritten };
}
