#!/usr/bin/env node
// `npm run bins:import -- <file or folder> [--url http://localhost:8787] [--token T] [--rows 50000] [--ranges]`
// Sends BIN CSVs (any of the three formats POST /admin/bins/import recognises) to a running Worker.
// Files are split on record boundaries into requests of --rows rows, each with the header; files
// of a folder that share a header are packed together. The token defaults to ADMIN_TOKEN in .dev.vars.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

function usage(message) {
  if (message) console.error(`bins:import: ${message}`);
  console.error('usage: npm run bins:import -- <file.csv or folder> [--url http://localhost:8787] [--token T] [--rows 50000] [--ranges]');
  process.exit(2);
}

function parseArgs(argv) {
  const options = { url: 'http://localhost:8787', token: undefined, rows: 50_000, ranges: false, path: undefined };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => argv[++i] ?? usage(`${arg} needs a value`);
    if (arg === '--url') options.url = value();
    else if (arg === '--token') options.token = value();
    else if (arg === '--rows') options.rows = Number(value());
    else if (arg === '--ranges') options.ranges = true;
    else if (arg === '--help' || arg === '-h') usage();
    else if (arg.startsWith('--')) usage(`unknown option ${arg}`);
    else if (options.path === undefined) options.path = arg;
    else usage(`unexpected argument ${arg}`);
  }
  if (!options.path) usage('a file or folder is required');
  if (!Number.isInteger(options.rows) || options.rows < 1 || options.rows > 100_000) usage('--rows must be 1 to 100000');
  return options;
}

function adminTokenFromDevVars() {
  const file = join(root, '.dev.vars');
  if (!existsSync(file)) return undefined;
  const line = readFileSync(file, 'utf8').split('\n').find((l) => l.startsWith('ADMIN_TOKEN='));
  return line?.slice('ADMIN_TOKEN='.length).trim();
}

function csvFiles(path) {
  const full = resolve(path);
  if (!existsSync(full)) usage(`${path} does not exist`);
  if (statSync(full).isFile()) return [full];
  return readdirSync(full)
    .filter((name) => name.toLowerCase().endsWith('.csv'))
    .sort()
    .map((name) => join(full, name));
}

/** Splits CSV text into records (quoted fields may hold line breaks); each keeps its line ending. */
function splitRecords(text) {
  const records = [];
  let start = 0;
  let inQuotes = false;
  let fieldStart = true;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    // As the server reads CSV: a quote opens a quoted field only at its start; inside one, a
    // doubled quote toggles twice (no net change).
    if (ch === 34 && (inQuotes || fieldStart)) inQuotes = !inQuotes;
    fieldStart = !inQuotes && (ch === 44 || ch === 10 || ch === 13);
    if (ch === 10 && !inQuotes) {
      records.push(text.slice(start, i + 1));
      start = i + 1;
    }
  }
  if (start < text.length) records.push(text.slice(start) + '\n');
  return records.filter((record) => record.trim() !== '');
}

async function post(url, token, body) {
  const response = await fetch(url, { method: 'POST', headers: { Authorization: token, 'Content-Type': 'text/csv' }, body });
  const text = await response.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (!response.ok || json?.status !== 'success') {
    throw new Error(`HTTP ${response.status}: ${json?.msg ?? text.slice(0, 200)}`);
  }
  return json.data;
}

const options = parseArgs(process.argv.slice(2));
const token = options.token ?? process.env.ADMIN_TOKEN ?? adminTokenFromDevVars();
if (!token) usage('no admin token: pass --token, set ADMIN_TOKEN, or run `npm run dev` once to create .dev.vars');
const endpoint = new URL(options.ranges ? '/admin/bins/ranges/import' : '/admin/bins/import', options.url).toString();
const files = csvFiles(options.path);
if (files.length === 0) usage(`no .csv files in ${options.path}`);

const totals = { imported: 0, skipped: 0, requests: 0 };
const errors = [];
const started = Date.now();
let header;
let pending = [];
let pendingFrom = '';

/** One line rewritten in place on a terminal; in a log (no TTY), one line per request sent. */
function progress(fileIndex, { afterRequest = false } = {}) {
  if (!process.stdout.isTTY && !afterRequest) return;
  const seconds = (Date.now() - started) / 1000;
  const rate = Math.round(totals.imported / Math.max(seconds, 0.001));
  const line = `file ${fileIndex}/${files.length}  requests ${totals.requests}  imported ${totals.imported.toLocaleString('en-US')}  skipped ${totals.skipped}  ${rate.toLocaleString('en-US')} rows/s`;
  process.stdout.write(process.stdout.isTTY ? `\r${line}   ` : `${line}\n`);
}

async function flush(fileIndex) {
  if (pending.length === 0) return;
  const data = await post(endpoint, token, header + pending.join(''));
  totals.imported += data.imported;
  totals.skipped += data.skipped;
  totals.requests++;
  // The server numbers lines within the request; say which file the request started in.
  for (const error of data.errors) errors.push(`${pendingFrom} (request ${totals.requests}) line ${error.line}: ${error.msg}`);
  pending = [];
  progress(fileIndex, { afterRequest: true });
}

try {
  for (const [index, file] of files.entries()) {
    const records = splitRecords(readFileSync(file, 'utf8').replace(/^\uFEFF/, ''));
    if (records.length === 0) continue;
    const [fileHeader, ...rows] = records;
    // Files with different headers (formats) are never packed into one request.
    if (header !== undefined && fileHeader.trim() !== header.trim()) await flush(index + 1);
    header = fileHeader;
    for (const row of rows) {
      if (pending.length === 0) pendingFrom = file;
      pending.push(row);
      if (pending.length >= options.rows) await flush(index + 1);
    }
    progress(index + 1);
  }
  await flush(files.length);
} catch (err) {
  process.stdout.write('\n');
  console.error(`bins:import: ${err.message}`);
  process.exit(1);
}

const seconds = (Date.now() - started) / 1000;
process.stdout.write('\n');
console.log(
  `Done: ${totals.imported.toLocaleString('en-US')} rows imported, ${totals.skipped} skipped, ${totals.requests} requests, ${seconds.toFixed(1)} s (${Math.round(totals.imported / Math.max(seconds, 0.001)).toLocaleString('en-US')} rows/s).`,
);
if (errors.length > 0) {
  console.log(`First ${Math.min(errors.length, 20)} of ${errors.length} reported errors:`);
  for (const line of errors.slice(0, 20)) console.log(`  ${line}`);
}
