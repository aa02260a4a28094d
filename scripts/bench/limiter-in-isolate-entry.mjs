// Bench-only Worker entry (`npm run bench`, the "limiter in isolate" row; never `npm run dev` or a
// deploy): the service's own src/index.ts with each rate-limit binding answered by a counter in the
// isolate's memory instead of wrangler dev's simulator (a Durable Object round trip per call). In
// production the binding's counters are cached on the machine that runs the Worker and synced in
// the background (docs: "You are not waiting on a network request"), so this is the closer model of
// a warm lookup there. The service still calls limit() once per lookup, with the same key.
import worker from '../../src/index.ts';

export * from '../../src/index.ts';

/** The bench's per-key limit (server.mjs raises every limiter to it), per 60 s window. */
const LIMIT = 100_000_000;
const PERIOD_MS = 60_000;

class InIsolateLimiter {
  #windows = new Map();

  async limit({ key }) {
    const now = Date.now();
    const window = this.#windows.get(key);
    if (!window || now - window.start >= PERIOD_MS) {
      this.#windows.set(key, { start: now, count: 1 });
      return { success: true };
    }
    window.count += 1;
    return { success: window.count <= LIMIT };
  }
}

const limiters = new Map();
const wrappedEnvs = new WeakMap();
function withLocalLimiters(env) {
  let wrapped = wrappedEnvs.get(env);
  if (wrapped) return wrapped;
  wrapped = { ...env };
  for (const [name, value] of Object.entries(env)) {
    if (value && typeof value === 'object' && typeof value.limit === 'function') {
      if (!limiters.has(name)) limiters.set(name, new InIsolateLimiter());
      wrapped[name] = limiters.get(name);
    }
  }
  wrappedEnvs.set(env, wrapped);
  return wrapped;
}

const handler = {};
for (const [name, fn] of Object.entries(worker)) {
  handler[name] = (first, env, ctx) => fn.call(worker, first, withLocalLimiters(env), ctx);
}
export default handler;
