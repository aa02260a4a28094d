#!/usr/bin/env node
// Runs one batch file through a running `npm run dev` and reports time and the Worker's memory.
//   node scripts/batch-memory.mjs <file.csv> [base=http://localhost:8787] [inspector=ws://127.0.0.1:9229/ws]
// (`npm run dev -- --inspector-port 9229` if another port is in use.) Every 250 ms it asks the
// Worker's isolate, through the inspector, for a full GC and then its used JS heap: that is the live
// set, what the Worker actually holds. It also samples the RSS of this dev server's workerd processes (Linux).
import { execFileSync } from 'node:child_process';
import { openAsBlob, readFileSync } from 'node:fs';
import { basename } from 'node:path';

const [file, base = 'http://localhost:8787', inspector = 'ws://127.0.0.1:9229/ws'] = process.argv.slice(2);
if (!file) throw new Error('usage: batch-memory.mjs <file.csv> [base] [inspector]');
const KEY = 'api_demoSecretKey0000000000000000000';

let phase = 'idle';
const samples = [];
const socket = new WebSocket(inspector, { headers: { Origin: 'http://localhost' } });
await new Promise((resolve, reject) => {
  socket.onopen = resolve;
  socket.onerror = () => reject(new Error(`cannot reach the inspector at ${inspector}`));
});
let id = 0;
socket.onmessage = (event) => {
  const message = JSON.parse(event.data);
  if (message.result && 'usedSize' in message.result) samples.push({ phase, heap: message.result.usedSize, rss: workerdRss() });
};
const timer = setInterval(() => {
  socket.send(JSON.stringify({ id: ++id, method: 'HeapProfiler.collectGarbage' }));
  socket.send(JSON.stringify({ id: ++id, method: 'Runtime.getHeapUsage' }));
}, 250);

/** The workerd processes of this dev server: the one listening on its port and its siblings (Linux). */
function devWorkerdPids() {
  try {
    const port = new URL(base).port || '80';
    const listing = execFileSync('ss', ['-ltnpH', `sport = :${port}`], { encoding: 'utf8' });
    const listener = /pid=(\d+)/.exec(listing)?.[1];
    if (!listener) return [];
    const parent = /PPid:\s+(\d+)/.exec(readFileSync(`/proc/${listener}/status`, 'utf8'))?.[1];
    const siblings = execFileSync('pgrep', ['-P', String(parent), '-x', 'workerd'], { encoding: 'utf8' }).trim().split('\n');
    return [...new Set([listener, ...siblings.filter(Boolean)])];
  } catch {
    return [];
  }
}
const pids = devWorkerdPids();

function workerdRss() {
  return pids.reduce((sum, pid) => {
    try {
      return sum + Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
    } catch {
      return sum;
    }
  }, 0);
}

const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
await wait(1500);
phase = 'upload';
const started = Date.now();
const form = new FormData();
form.append('file', await openAsBlob(file), basename(file));
const upload = await (await fetch(`${base}/api/filebatch`, { method: 'POST', headers: { Authorization: KEY }, body: form })).json();
if (upload.status !== 'success') throw new Error(JSON.stringify(upload));
const uploaded = Date.now();
phase = 'processing';
let record;
do {
  await wait(250);
  record = await (await fetch(`${base}/api/filebatch/${upload.data.id}`, { headers: { Authorization: KEY } })).json();
} while (record.status !== 'completed' && record.status !== 'failed');
const completed = Date.now();
phase = 'download';
const download = await fetch(`${base}/api/filebatch/${upload.data.id}/download`, { headers: { Authorization: KEY } });
let bytes = 0;
for await (const piece of download.body) bytes += piece.length;
const downloaded = Date.now();
phase = 'after';
await wait(1500);
clearInterval(timer);
socket.close();

const mb = (n) => (n / 1048576).toFixed(1);
const summary = (name) => {
  const heaps = samples.filter((s) => s.phase === name).map((s) => s.heap).sort((a, b) => a - b);
  const rss = samples.filter((s) => s.phase === name).map((s) => s.rss);
  if (heaps.length === 0) return `${name}: no sample`;
  return `${name}: live heap median ${mb(heaps[Math.floor(heaps.length / 2)])} MB, max ${mb(heaps[heaps.length - 1])} MB; workerd RSS max ${mb(Math.max(...rss))} MB (${heaps.length} samples)`;
};
console.log(`${basename(file)}: ${record.num_lines} rows, status ${record.status}`);
console.log(`upload ${((uploaded - started) / 1000).toFixed(1)} s, upload→completed ${((completed - started) / 1000).toFixed(1)} s, download ${mb(bytes)} MB in ${((downloaded - completed) / 1000).toFixed(1)} s`);
for (const name of ['idle', 'upload', 'processing', 'download', 'after']) console.log('  ' + summary(name));
console.log(`  (workerd pids measured: ${pids.join(', ') || 'none found'})`);
process.exit(0);
