// CPU profile of the Worker's isolate through wrangler dev's inspector (the DevTools protocol), so
// the cost of each stage can be read without editing the service: Profiler.start, run the work,
// Profiler.stop, then self time summed per function and attributed to its source file through the
// bundle's source map. Only the isolate's JavaScript is seen: D1, R2, KV and the queue broker run
// in other services of workerd, so their cost shows as the isolate's idle time awaiting I/O.
import { writeFileSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** A DevTools-protocol session with the Worker's isolate through wrangler's inspector at `port`. */
export async function connectInspector(port) {
  const targets = await (await fetch(`http://127.0.0.1:${port}/json`)).json();
  const target = targets.find((t) => t.webSocketDebuggerUrl);
  if (!target) throw new Error('no inspector target');
  // wrangler's inspector proxy accepts DevTools connections from local origins only.
  const ws = new WebSocket(target.webSocketDebuggerUrl, { headers: { origin: 'http://127.0.0.1' } });
  await new Promise((resolve, reject) => {
    ws.addEventListener('open', resolve, { once: true });
    ws.addEventListener('error', () => reject(new Error('inspector connection failed')), { once: true });
  });
  let id = 0;
  const pending = new Map();
  const listeners = new Map();
  ws.addEventListener('message', (event) => {
    const message = JSON.parse(String(event.data));
    if (message.method) for (const listener of listeners.get(message.method) ?? []) listener(message.params);
    const waiter = pending.get(message.id);
    if (!waiter) return;
    pending.delete(message.id);
    if (message.error) waiter.reject(new Error(message.error.message));
    else waiter.resolve(message.result);
  });
  const send = (method, params = {}) =>
    new Promise((resolve, reject) => {
      id += 1;
      pending.set(id, { resolve, reject });
      ws.send(JSON.stringify({ id, method, params }));
    });
  /** `listener(params)` for every event `method` the inspector sends (after its domain is enabled). */
  const on = (method, listener) => listeners.set(method, [...(listeners.get(method) ?? []), listener]);
  return { send, on, close: () => ws.close() };
}

/** The CPU profiler over an inspector session: { start(), stop() → profile, close() }. */
export async function connectProfiler(port) {
  const { send, close } = await connectInspector(port);
  await send('Profiler.enable');
  // 1 ms sampling asked; workerd's coarse clock makes the real interval a few ms.
  await send('Profiler.setSamplingInterval', { interval: 1000 });
  return {
    start: () => send('Profiler.start'),
    // An answer without a profile happened once after a 4-minute profiled run on a loaded machine:
    // said plainly (with what came back), so the run can be tried again rather than crash later.
    stop: async () => {
      const result = await send('Profiler.stop');
      if (!result?.profile) throw new Error(`profiler: Profiler.stop answered no profile (${JSON.stringify(result)?.slice(0, 200)})`);
      return result.profile;
    },
    close,
  };
}

/**
 * The isolate's V8 heap (Runtime.getHeapUsage: used and total, no forced GC) every `intervalMs`,
 * keeping the peak of `totalSize` (the heap V8 holds) since reset(). RSS counts all of workerd,
 * simulators included; this is the Worker's own share.
 */
export class HeapSampler {
  #session;
  #timer;
  #peakTotal = 0;
  #peakUsed = 0;

  /** Null when no session can be opened within 3 s (wrangler's proxy serves one DevTools client at a time). */
  static async connect(port, intervalMs = 250) {
    const sampler = new HeapSampler();
    const session = await Promise.race([
      connectInspector(port).catch(() => null),
      new Promise((resolve) => setTimeout(resolve, 3_000, null)),
    ]);
    if (!session) return null;
    sampler.#session = session;
    sampler.#timer = setInterval(() => void sampler.#tick(), intervalMs);
    sampler.#timer.unref();
    await sampler.#tick();
    return sampler;
  }

  async #tick() {
    try {
      const { usedSize, totalSize } = await this.#session.send('Runtime.getHeapUsage');
      this.#peakTotal = Math.max(this.#peakTotal, totalSize);
      this.#peakUsed = Math.max(this.#peakUsed, usedSize);
    } catch {
      // The isolate is being replaced (reload); the next tick reads the new one.
    }
  }

  reset() {
    this.#peakTotal = 0;
    this.#peakUsed = 0;
  }

  async peakMb() {
    await this.#tick();
    return { totalMb: this.#peakTotal / 1048576, usedMb: this.#peakUsed / 1048576 };
  }

  close() {
    clearInterval(this.#timer);
    this.#session.close();
  }
}

/**
 * Self time per function from a .cpuprofile: [{ name, url, line, selfMs, share }], largest first.
 * (idle), (program) and (garbage collector) are kept: they say how busy the isolate was.
 */
export function selfTimes(profile) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map();
  const { samples, timeDeltas } = profile;
  for (let i = 0; i < samples.length; i += 1) {
    const node = byId.get(samples[i]);
    // A sample's time is the delta to the next sample.
    const dt = (timeDeltas[i + 1] ?? 0) / 1000;
    const frame = node.callFrame;
    const key = `${frame.functionName || '(anonymous)'}|${frame.url}|${frame.lineNumber}`;
    self.set(key, (self.get(key) ?? 0) + dt);
  }
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  return [...self.entries()]
    .map(([key, selfMs]) => {
      const [name, url, line] = key.split('|');
      return { name, url: url.split('/').slice(-2).join('/'), line: Number(line) + 1, selfMs, share: selfMs / total };
    })
    .sort((a, b) => b.selfMs - a.selfMs);
}

/** Total self time grouped by `classify(entry) → category`. */
export function byCategory(entries, classify) {
  const totals = new Map();
  for (const entry of entries) {
    const category = classify(entry);
    totals.set(category, (totals.get(category) ?? 0) + entry.selfMs);
  }
  return [...totals.entries()].map(([category, ms]) => ({ category, ms })).sort((a, b) => b.ms - a.ms);
}

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/**
 * A minimal source-map reader: (generated line, column), both 0-based → original source path.
 * Enough to attribute a profile's functions to the project's files (src/..., node_modules/hono/...).
 */
export function sourceResolver(map) {
  const lines = [];
  let source = 0;
  for (const line of map.mappings.split(';')) {
    const segments = [];
    let column = 0;
    for (const segment of line.split(',')) {
      if (!segment) continue;
      const values = [];
      let shift = 0;
      let value = 0;
      for (const char of segment) {
        const digit = BASE64.indexOf(char);
        value += (digit & 31) << shift;
        if (digit & 32) {
          shift += 5;
        } else {
          values.push(value & 1 ? -(value >>> 1) : value >>> 1);
          shift = 0;
          value = 0;
        }
      }
      column += values[0];
      if (values.length > 1) source += values[1];
      // Original line/column deltas (values[2], values[3]) are not needed to name the file.
      segments.push([column, values.length > 1 ? source : -1]);
    }
    lines.push(segments);
  }
  return (line, column) => {
    const segments = lines[line] ?? [];
    let found = -1;
    for (const [col, src] of segments) {
      if (col > column) break;
      if (src >= 0) found = src;
    }
    if (found < 0) return '';
    return map.sources[found].replace(/^.*?(?=(src|node_modules)\/)/, '');
  };
}

/** Self time per function with its source file: [{ name, file, selfMs, share }], largest first. */
export function selfTimesBySource(profile, resolve) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map();
  const { samples, timeDeltas } = profile;
  for (let i = 0; i < samples.length; i += 1) {
    const frame = byId.get(samples[i]).callFrame;
    const dt = (timeDeltas[i + 1] ?? 0) / 1000;
    // Only the Worker's bundle is mapped; runtime modules (cloudflare-internal:...) keep their url.
    const bundled = !frame.url.includes(':') && /\.(js|mjs|ts)$/.test(frame.url);
    const file = !frame.url ? '(native)' : bundled ? resolve(frame.lineNumber, frame.columnNumber) || frame.url : frame.url;
    const key = `${frame.functionName || '(anonymous)'}|${file}`;
    self.set(key, (self.get(key) ?? 0) + dt);
  }
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  return [...self.entries()]
    .map(([key, selfMs]) => {
      const [name, file] = key.split('|');
      return { name, file, selfMs, share: selfMs / total };
    })
    .sort((a, b) => b.selfMs - a.selfMs);
}

/** The newest *.js.map under <dir>/.wrangler/tmp: the bundle wrangler dev is running. */
export function findBundleMap(dir) {
  const found = [];
  const walk = (path) => {
    let entries;
    try {
      entries = readdirSync(path, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const full = join(path, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.js.map')) found.push({ full, mtime: statSync(full).mtimeMs });
    }
  };
  walk(join(dir, '.wrangler', 'tmp'));
  found.sort((a, b) => b.mtime - a.mtime);
  return found[0] ? JSON.parse(readFileSync(found[0].full, 'utf8')) : null;
}

/** Rules: [category, test(file, name)], first match wins. */
export const STAGES = [
  ['idle (awaiting I/O: D1, KV, R2, DO, queue)', (f, n) => n === '(idle)'],
  ['bench I/O probe (binding wrappers, profile runs only)', (f) => /io-probe-entry/.test(f)],
  ['runtime: GC and internals', (f, n) => n === '(garbage collector)' || n === '(program)'],
  ['D1 calls (client library and tracing spans)', (f, n) => f.startsWith('cloudflare-internal:d1') || /tracing/.test(f) || ['enterSpan', 'addD1MetaToSpan', 'set tracing'].includes(n)],
  ['CSV parse and result lines (src/lib/batch-csv.ts)', (f) => /lib\/batch-csv|multipart/.test(f)],
  ['validation (zod, Luhn, ABA, expiry, amounts)', (f) => /node_modules\/zod|src\/schemas|middleware\/validate|lib\/(luhn|aba|expiry)|transaction-validation|transaction-amounts/.test(f)],
  ['crypto (card sealing, HMAC fingerprints, key hashes)', (f) => /card-crypto|lib\/crypto|request-hash|mask/.test(f)],
  ['auth (API key → merchant)', (f) => /middleware\/auth|services\/merchants|auth-cache|api-keys/.test(f)],
  ['rate limiter', (f, n) => /rate-limit|ratelimit/.test(f) || n === 'limit'],
  ['payment resolution (BIN lookup, vault, surcharge rules)', (f) => /bin-|bins\.ts|data-version|surcharge|card-brand|card-source|transaction-deps|services\/vault|storage\/vault|tokens/.test(f)],
  ['Durable Object (batch progress, alarms)', (f) => /durable-objects/.test(f)],
  ['transaction engine and sandbox processor', (f) => /transaction|processor|sandbox/.test(f)],
  ['batch pipeline (consumer, R2 parts, batches)', (f) => /batch|queue|chunk/.test(f)],
  ['storage modules (SQL, KV keys)', (f) => /src\/storage/.test(f)],
  ['HTTP framework (Hono, app)', (f) => /node_modules\/hono|src\/app\.ts|src\/routes/.test(f)],
  ['native calls (fetch, Response, crypto.subtle, JSON, bindings)', (f) => f === '(native)' || f === ''],
];

export function classify(entry) {
  for (const [category, test] of STAGES) if (test(entry.file, entry.name)) return category;
  return `other: ${entry.file}`;
}

/**
 * Profiles `work()` in the bench server's isolate; writes bench/results/<name>.cpuprofile and
 * answers { wallSeconds, profiledMs, categories: [{category, ms, share}], top: [{name, file, ms, share}] }.
 */
export async function profileWork(ctx, name, work) {
  const profiler = await connectProfiler(ctx.server.inspectorPort);
  // The inspector serves one session: the batch scenario's heap sampler stays off meanwhile.
  ctx.profiling = true;
  const started = performance.now();
  let profile;
  let workResult;
  try {
    await profiler.start();
    workResult = await work();
    profile = await profiler.stop();
  } finally {
    ctx.profiling = false;
    profiler.close();
  }
  const wallSeconds = (performance.now() - started) / 1000;
  writeFileSync(join(ctx.root, 'bench', 'results', `${name}.cpuprofile`), JSON.stringify(profile));
  const map = findBundleMap(ctx.server.dir);
  const entries = selfTimesBySource(profile, map ? sourceResolver(map) : () => '');
  const total = entries.reduce((sum, e) => sum + e.selfMs, 0);
  const round = (n) => Math.round(n * 10) / 10;
  return {
    wallSeconds: round(wallSeconds),
    profiledMs: round(total),
    samples: profile.samples.length,
    categories: byCategory(entries, classify).map((c) => ({ category: c.category, ms: round(c.ms), share: round((c.ms / total) * 100) })),
    top: entries.slice(0, 25).map((e) => ({ name: e.name, file: e.file, ms: round(e.selfMs), share: round(e.share * 100) })),
    work: workResult,
  };
}
