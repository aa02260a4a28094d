#!/usr/bin/env node
// CPU time of the multipart reader (src/lib/multipart.ts) on hostile upload bodies, measured in
// Node: workerd's clock stands still during pure CPU work, so the workerd tests count bytes
// examined and copied instead (test/unit/multipart.test.ts), and this script gives the seconds.
//
//   node scripts/multipart-cpu.mjs                      the current reader, bodies of 1, 16 and 32 MB
//   node scripts/multipart-cpu.mjs --compare <git-rev>  also the reader of <git-rev>, on the late boundary
//
// Bodies arrive in 64 KiB chunks, as a network delivers them. Cases:
//   late-limited  the first boundary comes after N MB; the service's 64 KiB limit before the file applies
//   late-open     the same body with no limit: the reader searches all N MB for the boundary
//   near-misses   an N MB file part made of almost-delimiters, the search's worst case
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MultipartReader } from '../src/lib/multipart.ts';

const BOUNDARY = '----formboundary7MA4YWxk';
const CHUNK = 64 * 1024;
const LIMIT = 64 * 1024;
const encoder = new TextEncoder();

function body(preambleBytes, file) {
  const head = encoder.encode(`${'p'.repeat(preambleBytes)}\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="f.csv"\r\n\r\n`);
  const tail = encoder.encode(`\r\n--${BOUNDARY}--\r\n`);
  const out = new Uint8Array(head.length + file.length + tail.length);
  out.set(head);
  out.set(file, head.length);
  out.set(tail, head.length + file.length);
  return out;
}

function nearMisses(size) {
  const unit = encoder.encode(`\r\n--${BOUNDARY.slice(0, -1)}X`);
  const out = new Uint8Array(size);
  for (let at = 0; at < size; at += unit.length) out.set(unit.subarray(0, size - at), at);
  return out;
}

function stream(bytes) {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.subarray(at, at + CHUNK));
      at += CHUNK;
    },
  });
}

/** Reads the form's first part to its end; answers the outcome (bytes of the file, or the error). */
async function readForm(Reader, bytes, options) {
  const reader = new Reader(stream(bytes), BOUNDARY, options);
  try {
    await reader.nextPart();
    let total = 0;
    for await (const piece of reader.body()) total += piece.length;
    return `read ${total} bytes`;
  } catch (err) {
    return `refused: ${err.message}`;
  }
}

async function cpu(run) {
  const before = process.cpuUsage();
  const outcome = await run();
  const used = process.cpuUsage(before);
  return { ms: (used.user + used.system) / 1000, outcome };
}

async function measure(label, Reader, cases) {
  for (const megabytes of [1, 16, 32]) {
    const size = megabytes * 1024 * 1024;
    for (const [name, bytes, options] of cases(size)) {
      if (name === undefined) continue;
      const { ms, outcome } = await cpu(() => readForm(Reader, bytes, options));
      console.log(`${label.padEnd(8)} ${name.padEnd(13)} ${String(megabytes).padStart(2)} MB  ${ms.toFixed(0).padStart(7)} ms CPU  (${outcome})`);
    }
  }
}

const small = encoder.encode('"transaction_type","amount"\n"sale","1"\n');
await measure('current', MultipartReader, (size) => [
  ['late-limited', body(size, small), { maxBytesBeforePart: LIMIT }],
  ['late-open', body(size, small), {}],
  ['near-misses', body(0, nearMisses(size)), {}],
]);

const compare = process.argv.indexOf('--compare');
if (compare > 0) {
  const rev = process.argv[compare + 1];
  if (!rev) throw new Error('--compare needs a git revision');
  const root = fileURLToPath(new URL('..', import.meta.url));
  const dir = mkdtempSync(join(tmpdir(), 'multipart-old-'));
  try {
    const file = join(dir, 'multipart.ts');
    writeFileSync(file, execFileSync('git', ['show', `${rev}:src/lib/multipart.ts`], { cwd: root }));
    const { MultipartReader: OldReader } = await import(file);
    // The old reader has no limit: the late boundary is searched for, whatever its distance.
    await measure(rev.slice(0, 8), OldReader, (size) => [['late-open', body(size, small), {}], ['near-misses', body(0, nearMisses(size)), {}]]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
