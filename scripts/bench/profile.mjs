// CPU profile of the Worker's isolate through wrangler dev's inspector (the DevTools protocol), so
// the cost of each stage can be read without editing the service: Profiler.start, run the work,
// Profiler.stop, then self time summed per function. Only the isolate's JavaScript is seen: D1, R2,
// KV and Durable Object storage run in other isolates, so their cost shows as time awaiting I/O.

/** Connects to the inspector at `port`; returns { start(), stop() → profile, close() }. */
export async function connectProfiler(port) {
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
  ws.addEventListener('message', (event) => {
    const message = JSON.parse(String(event.data));
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
  await send('Profiler.enable');
  // 1 ms sampling: fine enough for per-row stages, cheap enough not to distort them much.
  await send('Profiler.setSamplingInterval', { interval: 1000 });
  return {
    start: () => send('Profiler.start'),
    stop: async () => (await send('Profiler.stop')).profile,
    close: () => ws.close(),
  };
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
