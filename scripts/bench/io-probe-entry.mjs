// Bench-only Worker entry (used by `npm run bench -- --profile` for its profile runs, never by
// `npm run dev` or a deploy): the service's own src/index.ts, with every binding in `env` wrapped
// so that each call to D1, KV, R2, the queue, the rate limiters and the Durable Object is counted
// and timed. The service's code is unchanged; GET /__bench/io answers the totals, POST
// /__bench/io/reset clears them.
//
// Timing caveat: in workerd, Date.now() only advances when I/O completes (a Spectre mitigation),
// so a call's measured time runs from the last I/O event before it to its own completion: it
// includes any CPU work done in between. Counts are exact.
import worker from '../../src/index.ts';

export * from '../../src/index.ts';

const stats = new Map();

function record(name, ms, bytes = 0) {
  const entry = stats.get(name) ?? { calls: 0, ms: 0, paramBytes: 0 };
  entry.calls += 1;
  entry.ms += ms;
  entry.paramBytes += bytes;
  stats.set(name, entry);
}

/** Characters of the string parameters bound to a D1 statement: what its request has to carry. */
const paramBytes = new WeakMap();
const sizeOf = (args) => args.reduce((sum, a) => sum + (typeof a === 'string' ? a.length : 8), 0);

/** Times `fn()` under `name` when it returns a promise; plain values pass through. */
function timed(name, fn, bytes = 0) {
  const started = Date.now();
  const result = fn();
  if (!result || typeof result.then !== 'function') return result;
  return result.then(
    (value) => {
      record(name, Date.now() - started, bytes);
      return value;
    },
    (error) => {
      record(`${name} (failed)`, Date.now() - started);
      throw error;
    },
  );
}

// D1: statements are wrapped so first/all/run/raw are timed; batch() gets the real statements back.
const realStatement = new WeakMap();
function wrapStatement(statement, sql, bytes = 0) {
  // "D1 SELECT vault_customers": the statement's verb and its first table.
  const verb = sql.trimStart().split(/\s+/, 1)[0].toUpperCase();
  const table = /\b(?:FROM|INTO|UPDATE)\s+([A-Za-z_]+)/i.exec(sql)?.[1] ?? '';
  const kind = `${verb} ${table}`.trim();
  const proxy = new Proxy(statement, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (prop === 'bind') return (...args) => wrapStatement(value.apply(target, args), sql, sql.length + sizeOf(args));
      if (['first', 'all', 'run', 'raw'].includes(prop)) return (...args) => timed(`D1 ${kind}`, () => value.apply(target, args), bytes || sql.length);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  realStatement.set(proxy, statement);
  paramBytes.set(proxy, bytes || sql.length);
  return proxy;
}
function wrapD1(db) {
  return new Proxy(db, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (prop === 'prepare') return (sql) => wrapStatement(value.call(target, sql), sql);
      if (prop === 'batch') {
        return (statements) =>
          timed('D1 batch', () => value.call(target, statements.map((s) => realStatement.get(s) ?? s)), statements.reduce((sum, s) => sum + (paramBytes.get(s) ?? 0), 0));
      }
      if (prop === 'exec') return (...args) => timed('D1 exec', () => value.apply(target, args));
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** Binds every method; the listed ones are timed, and their results optionally wrapped too. */
function wrapMethods(object, label, methods, wrapResult = {}) {
  return new Proxy(object, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      if (methods.includes(prop)) {
        return (...args) => {
          const result = timed(`${label} ${String(prop)}`, () => value.apply(target, args));
          const wrap = wrapResult[prop];
          return wrap && result && typeof result.then === 'function' ? result.then(wrap) : result;
        };
      }
      return value.bind(target);
    },
  });
}

function wrapR2(bucket, label) {
  const wrapUpload = (upload) => wrapMethods(upload, `${label} multipart`, ['uploadPart', 'complete', 'abort']);
  return new Proxy(wrapMethods(bucket, label, ['get', 'put', 'head', 'delete', 'list', 'createMultipartUpload'], { createMultipartUpload: wrapUpload }), {
    get(target, prop) {
      if (prop === 'resumeMultipartUpload') return (...args) => wrapUpload(bucket.resumeMultipartUpload(...args));
      return Reflect.get(target, prop);
    },
  });
}

// A Durable Object stub's methods are RPC calls: each one is timed as "DO <method>".
function wrapStub(stub, label) {
  return new Proxy(stub, {
    get(target, prop) {
      const value = Reflect.get(target, prop);
      if (typeof prop !== 'string' || typeof value !== 'function') return value;
      return (...args) => timed(`${label} ${prop}`, () => Reflect.apply(value, target, args));
    },
  });
}
function wrapNamespace(namespace, label) {
  return new Proxy(namespace, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (prop === 'get' || prop === 'getByName') return (...args) => wrapStub(value.apply(target, args), label);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

function looksLike(value, methods) {
  return value && typeof value === 'object' && methods.every((m) => typeof value[m] === 'function');
}

const wrappedEnvs = new WeakMap();
function wrapEnv(env) {
  const cached = wrappedEnvs.get(env);
  if (cached) return cached;
  const wrapped = { ...env };
  for (const [name, value] of Object.entries(env)) {
    if (looksLike(value, ['prepare', 'batch'])) wrapped[name] = wrapD1(value);
    else if (looksLike(value, ['createMultipartUpload', 'put', 'get'])) wrapped[name] = wrapR2(value, `R2`);
    else if (looksLike(value, ['getWithMetadata', 'put', 'get'])) wrapped[name] = wrapMethods(value, `KV ${name}`, ['get', 'getWithMetadata', 'put', 'delete', 'list']);
    else if (looksLike(value, ['sendBatch', 'send'])) wrapped[name] = wrapMethods(value, 'Queue', ['send', 'sendBatch']);
    else if (looksLike(value, ['idFromName', 'get'])) wrapped[name] = wrapNamespace(value, 'DO');
    else if (looksLike(value, ['limit'])) wrapped[name] = wrapMethods(value, 'rate limiter', ['limit']);
  }
  wrappedEnvs.set(env, wrapped);
  return wrapped;
}

const handler = {};
for (const [name, fn] of Object.entries(worker)) {
  handler[name] = (first, env, ctx) => fn.call(worker, first, wrapEnv(env), ctx);
}
const serviceFetch = handler.fetch;
handler.fetch = (request, env, ctx) => {
  const { pathname } = new URL(request.url);
  if (pathname === '/__bench/io') {
    const entries = [...stats.entries()].map(([name, s]) => ({ name, calls: s.calls, ms: s.ms, paramBytes: s.paramBytes }));
    return Response.json(entries.sort((a, b) => b.ms - a.ms));
  }
  if (pathname === '/__bench/io/reset' && request.method === 'POST') {
    stats.clear();
    return new Response(null, { status: 204 });
  }
  return serviceFetch(request, env, ctx);
};

export default handler;
