// Bench-only Worker entry (used by `npm run bench` for its cost and CPU runs, never by `npm run dev`
// or a deploy): the service's own src/index.ts, with every binding in `env` wrapped so that each
// call to D1, KV, R2, the queue, the rate limiters and the Durable Object is counted and timed, and
// with every unit Cloudflare bills counted the way its pricing pages define it:
//   - Worker invocations (fetch by route, queue deliveries, alarms), Durable Object requests (one
//     per RPC method call on a stub, and per alarm) and their duration (wall time per object);
//   - D1 rows read and written from each statement's `meta` (`first()` is answered through `all()`,
//     which runs the same query, so its meta is seen too), and the database size after each one;
//   - the Durable Objects' own SQLite rows (each cursor's rowsRead/rowsWritten; setAlarm counts one
//     row written; deleteAll counts one row written for every row it deletes, which is the most it
//     can be billed);
//   - KV reads/writes/deletes/lists per key, and bytes written × their TTL;
//   - R2 Class A / Class B / free operations, and bytes written under each key prefix;
//   - Queue operations per 64 KB (a write per message sent, a read per delivery, a delete per ack).
// The service's code is unchanged; GET /__bench/io answers the totals, POST /__bench/io/reset clears them.
//
// Timing caveat: in workerd, Date.now() only advances when I/O completes (a Spectre mitigation),
// so a call's measured time runs from the last I/O event before it to its own completion: it
// includes any CPU work done in between. Counts are exact.
import worker, {
  BatchProgress as ServiceBatchProgress,
  LedgerShard as ServiceLedgerShard,
  SandboxAcquirer as ServiceSandboxAcquirer,
  SearchDay as ServiceSearchDay,
  SearchDirectory as ServiceSearchDirectory,
  SearchKeys as ServiceSearchKeys,
  TransactionExport as ServiceTransactionExport,
} from '../../src/index.ts';
import { authenticateKey } from '../../src/services/merchants.ts';
import { searchDayName, searchKeysName, weekOf } from '../../src/services/search/names.ts';
import { processTransactions } from '../../src/services/recorded.ts';
import { retentionDays, shardFor } from '../../src/services/transactions/ledger.ts';
import { defaultSandboxProcessorId } from '../../src/services/transactions/processors/registry.ts';
import { sandboxAcquirerName } from '../../src/services/transactions/processors/sandbox.ts';

export * from '../../src/index.ts';

/** Queues bill one operation per 64 KB (1,000-byte KB) of a message, metadata (~100 B) included. */
const QUEUE_OP_BYTES = 64_000;
const QUEUE_MESSAGE_OVERHEAD = 100;

function emptyTotals() {
  return {
    calls: new Map(),
    invocations: new Map(),
    d1: new Map(),
    d1SizeFirst: null,
    d1SizeLast: null,
    kv: new Map(),
    r2: { classA: 0, classB: 0, free: 0, bytesByPrefix: {} },
    queue: { messagesSent: 0, writeOps: 0, deliveries: 0, readOps: 0, deleteOps: 0, retries: 0 },
    durableObjects: { requests: 0, alarms: 0, busy: new Map(), sqlCursors: [], sqlStatements: 0, alarmRowsWritten: 0, ledgerBytesHeld: 0, byClass: new Map(), requestsByClass: new Map() },
    limiter: 0,
    email: { messages: 0 },
  };
}
let totals = emptyTotals();

function add(map, key, fields) {
  const entry = map.get(key) ?? {};
  for (const [name, value] of Object.entries(fields)) entry[name] = (entry[name] ?? 0) + value;
  map.set(key, entry);
}

function record(name, ms, bytes = 0) {
  add(totals.calls, name, { calls: 1, ms, paramBytes: bytes });
}

/** Characters of the string parameters bound to a D1 statement: what its request has to carry. */
const paramBytes = new WeakMap();
const sizeOf = (args) => args.reduce((sum, a) => sum + (typeof a === 'string' ? a.length : 8), 0);
const encoder = new TextEncoder();
const byteLength = (value) =>
  typeof value === 'string' ? encoder.encode(value).byteLength
  : value instanceof ArrayBuffer || ArrayBuffer.isView(value) ? value.byteLength
  : 0;

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

/** Rows read and written by one D1 statement (from its result's meta), under its kind. */
function meterD1(kind, result) {
  const meta = result?.meta;
  if (!meta) return;
  add(totals.d1, kind, { statements: 1, rowsRead: meta.rows_read ?? 0, rowsWritten: meta.rows_written ?? 0 });
  if (typeof meta.size_after === 'number') {
    totals.d1SizeFirst ??= meta.size_after;
    totals.d1SizeLast = meta.size_after;
  }
}

// "SELECT vault_customers": the statement's verb and its first table.
function statementKind(sql) {
  const verb = sql.trimStart().split(/\s+/, 1)[0].toUpperCase();
  const table = /\b(?:FROM|INTO|UPDATE)\s+([A-Za-z_]+)/i.exec(sql)?.[1] ?? '';
  return `${verb} ${table}`.trim();
}

// D1: statements are wrapped so first/all/run/raw are timed; batch() gets the real statements back.
const realStatement = new WeakMap();
const statementKinds = new WeakMap();
function wrapStatement(statement, sql, bytes = 0) {
  const kind = statementKind(sql);
  const proxy = new Proxy(statement, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (prop === 'bind') return (...args) => wrapStatement(value.apply(target, args), sql, sql.length + sizeOf(args));
      if (prop === 'all' || prop === 'run') {
        return (...args) => timed(`D1 ${kind}`, () => value.apply(target, args).then((r) => (meterD1(kind, r), r)), bytes || sql.length);
      }
      if (prop === 'first') {
        // D1's first() runs the whole statement and answers its first row, without meta: all() runs
        // the same statement and shows the rows read and written.
        return (column) =>
          timed(`D1 ${kind}`, async () => {
            const result = await target.all();
            meterD1(kind, result);
            const row = result.results[0];
            if (column === undefined) return row ?? null;
            if (row !== undefined && !(column in row)) throw new Error(`D1_COLUMN_NOTFOUND: Column not found (${column})`);
            return row?.[column] ?? null;
          }, bytes || sql.length);
      }
      if (prop === 'raw') return (...args) => timed(`D1 ${kind}`, () => value.apply(target, args), bytes || sql.length);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  realStatement.set(proxy, statement);
  statementKinds.set(proxy, kind);
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
          timed(
            'D1 batch',
            () =>
              value.call(target, statements.map((s) => realStatement.get(s) ?? s)).then((results) => {
                results.forEach((result, i) => meterD1(statementKinds.get(statements[i]) ?? 'batch', result));
                return results;
              }),
            statements.reduce((sum, s) => sum + (paramBytes.get(s) ?? 0), 0),
          );
      }
      if (prop === 'exec') return (...args) => timed('D1 exec', () => value.apply(target, args));
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** Binds every method; the listed ones are timed (and metered by `meter(prop, args)` if given). */
function wrapMethods(object, label, methods, { wrapResult = {}, meter } = {}) {
  return new Proxy(object, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      if (methods.includes(prop)) {
        return (...args) => {
          meter?.(prop, args);
          const result = timed(`${label} ${String(prop)}`, () => value.apply(target, args));
          const wrap = wrapResult[prop];
          return wrap && result && typeof result.then === 'function' ? result.then(wrap) : result;
        };
      }
      return value.bind(target);
    },
  });
}

function wrapKv(namespace, name) {
  return wrapMethods(namespace, `KV ${name}`, ['get', 'getWithMetadata', 'put', 'delete', 'list'], {
    meter(method, args) {
      const keys = Array.isArray(args[0]) ? args[0].length : 1;
      if (method === 'get' || method === 'getWithMetadata') add(totals.kv, name, { reads: keys });
      else if (method === 'delete') add(totals.kv, name, { deletes: 1 });
      else if (method === 'list') add(totals.kv, name, { lists: 1 });
      else if (method === 'put') {
        // Held for the entry's TTL (or counted as kept for a month when it has none).
        const ttl = args[2]?.expirationTtl ?? (args[2]?.expiration ? args[2].expiration - Date.now() / 1000 : 30 * 86_400);
        add(totals.kv, name, { writes: 1, bytesTimesSeconds: (byteLength(args[1]) + encoder.encode(String(args[0])).byteLength) * ttl });
      }
    },
  });
}

// R2 operation classes (r2/pricing): puts, multipart steps and lists are Class A, gets and heads
// Class B; deletes and aborts are free.
const R2_CLASS = { put: 'classA', createMultipartUpload: 'classA', uploadPart: 'classA', complete: 'classA', list: 'classA', get: 'classB', head: 'classB', delete: 'free', abort: 'free' };
const keyPrefix = (key) => String(key).split('/', 1)[0];
function meterR2(method, bytes = 0, key = '') {
  totals.r2[R2_CLASS[method]] += 1;
  if (bytes > 0) totals.r2.bytesByPrefix[keyPrefix(key)] = (totals.r2.bytesByPrefix[keyPrefix(key)] ?? 0) + bytes;
}
function wrapR2(bucket) {
  const wrapUpload = (key) => (upload) =>
    wrapMethods(upload, 'R2 multipart', ['uploadPart', 'complete', 'abort'], {
      meter: (method, args) => meterR2(method, method === 'uploadPart' ? byteLength(args[1]) : 0, key),
    });
  const methods = ['get', 'put', 'head', 'delete', 'list', 'createMultipartUpload'];
  const wrapped = wrapMethods(bucket, 'R2', methods, {
    meter: (method, args) => meterR2(method, method === 'put' ? byteLength(args[1]) : 0, args[0]),
  });
  return new Proxy(wrapped, {
    get(target, prop) {
      if (prop === 'createMultipartUpload') {
        return (key, ...rest) => {
          meterR2('createMultipartUpload');
          return timed('R2 createMultipartUpload', () => bucket.createMultipartUpload(key, ...rest)).then(wrapUpload(key));
        };
      }
      if (prop === 'resumeMultipartUpload') return (key, ...rest) => wrapUpload(key)(bucket.resumeMultipartUpload(key, ...rest));
      return Reflect.get(target, prop);
    },
  });
}

function queueOps(body) {
  const bytes = byteLength(typeof body === 'string' ? body : JSON.stringify(body)) + QUEUE_MESSAGE_OVERHEAD;
  return Math.max(1, Math.ceil(bytes / QUEUE_OP_BYTES));
}
function wrapQueue(queue) {
  return wrapMethods(queue, 'Queue', ['send', 'sendBatch'], {
    meter(method, args) {
      const bodies = method === 'send' ? [args[0]] : args[0].map((m) => m.body);
      totals.queue.messagesSent += bodies.length;
      for (const body of bodies) totals.queue.writeOps += queueOps(body);
    },
  });
}

// Durable Objects: each RPC method call on a stub is a billed request; the object is billed for
// wall time while a request is active on it (calls in flight at once share it).
function objectBusy(name, started, ended) {
  const intervals = totals.durableObjects.busy.get(name) ?? [];
  intervals.push([started, ended]);
  totals.durableObjects.busy.set(name, intervals);
}
function wrapStub(stub, label, name, binding) {
  return new Proxy(stub, {
    get(target, prop) {
      const value = Reflect.get(target, prop);
      if (typeof prop !== 'string' || typeof value !== 'function') return value;
      return (...args) => {
        totals.durableObjects.requests += 1;
        const perClass = totals.durableObjects.requestsByClass.get(binding) ?? { requests: 0, objects: new Set() };
        perClass.requests += 1;
        perClass.objects.add(name);
        totals.durableObjects.requestsByClass.set(binding, perClass);
        const started = Date.now();
        return timed(`${label} ${prop}`, () =>
          Promise.resolve(Reflect.apply(value, target, args)).finally(() => objectBusy(name, started, Date.now())),
        );
      };
    },
  });
}
function wrapNamespace(namespace, label, binding) {
  return new Proxy(namespace, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (prop === 'getByName') return (name, ...rest) => wrapStub(value.call(target, name, ...rest), label, String(name), binding);
      if (prop === 'get') return (id, ...rest) => wrapStub(value.call(target, id, ...rest), label, String(id), binding);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

function wrapLimiter(limiter) {
  return wrapMethods(limiter, 'rate limiter', ['limit'], { meter: () => (totals.limiter += 1) });
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
    // The Email Service's send_email binding (receipts): an RPC stub answers every property as a
    // method (even `apply`), so it is told by its name before the shape tests below mistake it for
    // D1, and called as `stub.send(…)`, never through Function.prototype.apply.
    if (name === 'RECEIPT_EMAIL') {
      wrapped[name] = {
        send: (message) => {
          totals.email.messages += 1;
          return timed('Email send', () => value.send(message));
        },
      };
    }
    else if (looksLike(value, ['prepare', 'batch'])) wrapped[name] = wrapD1(value);
    else if (looksLike(value, ['createMultipartUpload', 'put', 'get'])) wrapped[name] = wrapR2(value);
    else if (looksLike(value, ['getWithMetadata', 'put', 'get'])) wrapped[name] = wrapKv(value, name);
    else if (looksLike(value, ['sendBatch', 'send'])) wrapped[name] = wrapQueue(value);
    else if (looksLike(value, ['idFromName', 'get'])) wrapped[name] = wrapNamespace(value, 'DO', name);
    else if (looksLike(value, ['limit'])) wrapped[name] = wrapLimiter(value);
  }
  wrappedEnvs.set(env, wrapped);
  return wrapped;
}

/**
 * The object's own storage, counted: SQL cursors (their rowsRead/rowsWritten are read when the
 * totals are asked for, after the statements have run) and alarms (each setAlarm() is one row
 * written, per the Durable Objects pricing page). The storage is swapped on the state object before
 * the service's constructor runs, so its CREATE TABLE statements are counted too.
 */
function meterObjectStorage(ctx, label = 'object') {
  const storage = ctx.storage;
  const classTotals = () => {
    const entry = totals.durableObjects.byClass.get(label) ?? { cursors: [], alarmRowsWritten: 0 };
    totals.durableObjects.byClass.set(label, entry);
    return entry;
  };
  const sql = new Proxy(storage.sql, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (prop === 'exec') {
        return (...args) => {
          const cursor = value.apply(target, args);
          totals.durableObjects.sqlStatements += 1;
          totals.durableObjects.sqlCursors.push(cursor);
          classTotals().cursors.push(cursor);
          return cursor;
        };
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const metered = new Proxy(storage, {
    get(target, prop) {
      if (prop === 'sql') return sql;
      const value = Reflect.get(target, prop, target);
      if (prop === 'setAlarm' || prop === 'deleteAlarm') {
        return (...args) => {
          totals.durableObjects.alarmRowsWritten += 1;
          classTotals().alarmRowsWritten += 1;
          return value.apply(target, args);
        };
      }
      if (prop === 'deleteAll') {
        return (...args) => {
          // Counted as one row written per row deleted (and one for the alarm), the most it can cost.
          const tables = target.sql
            .exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'")
            .toArray();
          let deleted = 1;
          for (const { name } of tables) deleted += target.sql.exec(`SELECT COUNT(*) AS n FROM "${name}"`).one().n;
          totals.durableObjects.alarmRowsWritten += deleted;
          classTotals().alarmRowsWritten += deleted;
          return value.apply(target, args);
        };
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  try {
    Object.defineProperty(ctx, 'storage', { value: metered, configurable: true });
  } catch {
    // The state object refused the swap: the object's own rows go uncounted (the totals say so).
    totals.durableObjects.storageUncounted = true;
  }
}

/** A service's Durable Object class, with its env wrapped, its storage counted and its alarms counted. */
function metered(Service, label = Service.name) {
  return class extends Service {
    constructor(ctx, env) {
      meterObjectStorage(ctx, label);
      super(ctx, wrapEnv(env));
    }

    async alarm(...args) {
      totals.durableObjects.alarms += 1;
      add(totals.invocations, 'DO alarm', { count: 1 });
      return super.alarm(...args);
    }
  };
}

export class BatchProgress extends metered(ServiceBatchProgress) {}

export class LedgerShard extends metered(ServiceLedgerShard) {
  /** The shard's SQLite size in bytes (bench only: what the shard holds until it is archived). */
  async benchDatabaseSize() {
    return this.ctx.storage.sql.databaseSize;
  }
}

/** The sandbox processor's memory. */
export class SandboxAcquirer extends metered(ServiceSandboxAcquirer) {}

/** The search index (docs/capacity.md, "Search"): its rows are counted per class (GET /__bench/io, `byClass`). */
export class SearchDay extends metered(ServiceSearchDay, 'SearchDay') {
  async benchDatabaseSize() {
    return this.ctx.storage.sql.databaseSize;
  }
}
export class SearchKeys extends metered(ServiceSearchKeys, 'SearchKeys') {
  async benchDatabaseSize() {
    return this.ctx.storage.sql.databaseSize;
  }
}
export class SearchDirectory extends metered(ServiceSearchDirectory, 'SearchDirectory') {}
export class TransactionExport extends metered(ServiceTransactionExport, 'TransactionExport') {}

/**
 * POST /__bench/retention {"batchId": "..."}: the retention work of a batch's rows, done now as it
 * will be done later, so the cost run counts it: the batch's ledger shard archived to R2 and emptied
 * (as its alarm does after TRANSACTION_RETENTION_DAYS) and the sandbox acquirer's memory of the
 * batch's day forgotten (as its alarm does after 30 days).
 */
async function benchRetention(request, env) {
  const { batchId } = await request.json();
  const metered = wrapEnv(env);
  const batch = await env.DB.prepare('SELECT merchant_id, created_at FROM batches WHERE id = ?1').bind(batchId).first();
  if (!batch) return Response.json({ error: 'no such batch' }, { status: 404 });
  const shard = shardFor(metered, { kind: 'batch', merchantId: batch.merchant_id, batchId }, batch.created_at);
  const archiveAt = new Date(Date.parse(batch.created_at) + retentionDays(env) * 86_400_000).toISOString();
  totals.durableObjects.ledgerBytesHeld += await env.LEDGER_SHARD.getByName(shard.identity.name).benchDatabaseSize();
  // Retention runs in steps (one archive file each), as the shard's alarm runs them one tick at a time.
  let archived = await shard.stub.runRetention(archiveAt);
  for (let steps = 1; archived.more && steps < 1_000; steps += 1) archived = await shard.stub.runRetention(archiveAt);
  // The search index's objects of the batch's days and weeks: held as long, then emptied by their
  // alarms. They also hold the merchant's other transactions of those days, which are counted
  // with the batch here: at most what its rows cost.
  const search = await searchRetention(env, batch.merchant_id, shard.identity.name);
  const day = batch.created_at.slice(0, 10);
  const forgotten = [];
  for (const offset of [0, 1]) {
    const at = new Date(Date.parse(`${day}T00:00:00.000Z`) + offset * 86_400_000).toISOString().slice(0, 10);
    const stub = metered.SANDBOX_ACQUIRER.getByName(sandboxAcquirerName(defaultSandboxProcessorId(batch.merchant_id), at));
    forgotten.push(await stub.forgetIfDue(at, new Date(Date.now() + 400 * 86_400_000).toISOString()));
  }
  return Response.json({ archived, forgotten, search });
}

/** A shard's search day and week objects (its part of each): their size held, then their retention run as their alarms will. */
async function searchRetention(env, merchantId, shardName) {
  const metered = wrapEnv(env);
  const placed = await env.SEARCH_DIRECTORY.getByName(merchantId).shardDayParts(shardName);
  const days = placed.map((d) => d.day);
  const dayMs = 86_400_000;
  const later = (day, extraDays) => new Date(Date.parse(`${day}T00:00:00.000Z`) + (retentionDays(env) + extraDays) * dayMs).toISOString();
  for (const { day, part } of placed) {
    totals.durableObjects.ledgerBytesHeld += await env.SEARCH_DAY.getByName(searchDayName(merchantId, day, part)).benchDatabaseSize();
    await metered.SEARCH_DAY.getByName(searchDayName(merchantId, day, part)).runRetention(later(day, 1));
  }
  const weeks = new Map(placed.map(({ day, part }) => [`${weekOf(day)}/${part}`, { week: weekOf(day), part }]));
  for (const { week, part } of weeks.values()) {
    totals.durableObjects.ledgerBytesHeld += await env.SEARCH_KEYS.getByName(searchKeysName(merchantId, week, part)).benchDatabaseSize();
    await metered.SEARCH_KEYS.getByName(searchKeysName(merchantId, week, part)).upkeep(later(week, 8));
  }
  return { days };
}

/**
 * POST /__bench/search-seed {"merchantKey", "days", "apiPerDay", "batches", "rowsPerBatch"}: a
 * merchant's transactions spread over the last `days` UTC days, through the engine with the clock
 * of each day (what `npm run dev` cannot do over HTTP): `apiPerDay` API sales a day (one API day
 * shard each day) and `batches` batch files of `rowsPerBatch` rows, each on one of the days (a
 * batch shard each), chunks of 500 rows. Answers the shards made and the rows.
 */
async function benchSearchSeed(request, env) {
  const { merchantKey, days, apiPerDay, batches, rowsPerBatch } = await request.json();
  const metered = wrapEnv(env);
  const caller = await authenticateKey(env, merchantKey);
  if (!caller) return Response.json({ error: 'unknown key' }, { status: 404 });
  const dayMs = 86_400_000;
  const today = Date.parse(`${new Date().toISOString().slice(0, 10)}T00:00:00.000Z`);
  const dayStart = (d) => today - (days - 1 - d) * dayMs;
  const sale = (i, tag) => ({ transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount: String(1000 + (i % 5000)), order_id: `${tag}${i}` });
  let apiRows = 0;
  for (let d = 0; d < days; d++) {
    const requests = Array.from({ length: apiPerDay }, (_, i) => ({ input: sale(i, `A${d}X`), idempotencyKey: `seed-${d}-${i}-${crypto.randomUUID()}` }));
    for (const [i, one] of requests.entries()) {
      const outcomes = await processTransactions(metered, caller, [one], { source: 'api', ipAddress: '203.0.113.9' }, () => new Date(dayStart(d) + 3_600_000 + i * 60_000));
      if (outcomes[0]?.ok) apiRows++;
    }
  }
  let batchRows = 0;
  for (let b = 0; b < batches; b++) {
    const d = b % days;
    const batchId = `bat_${crypto.randomUUID().replaceAll('-', '').slice(0, 20)}`;
    const createdAt = new Date(dayStart(d) + 7_200_000 + b * 1_000);
    for (let first = 2; first < rowsPerBatch + 2; first += 500) {
      const lines = Array.from({ length: Math.min(500, rowsPerBatch + 2 - first) }, (_, i) => first + i);
      const requests = lines.map((line) => ({ input: sale(line, `B${b}X`), idempotencyKey: `${batchId}:${line}`, line }));
      const context = { source: 'batch', ipAddress: '203.0.113.9', batchId, batchCreatedAt: createdAt.toISOString(), chunkFirstLine: first };
      const outcomes = await processTransactions(metered, caller, requests, context, () => new Date(createdAt.getTime() + first * 10));
      batchRows += outcomes.filter((o) => o.ok).length;
    }
  }
  return Response.json({ apiShards: days, batchShards: batches, apiRows, batchRows, firstDay: new Date(dayStart(0)).toISOString().slice(0, 10) });
}

/**
 * POST /__bench/receipts {"batchId": "..."}: the batch's receipts by state, read from its ledger
 * shard through the unmetered binding (waiting for the sending is not part of what is counted).
 */
async function benchReceipts(request, env) {
  const { batchId } = await request.json();
  const batch = await env.DB.prepare('SELECT merchant_id, created_at FROM batches WHERE id = ?1').bind(batchId).first();
  if (!batch) return Response.json({ error: 'no such batch' }, { status: 404 });
  const shard = shardFor(env, { kind: 'batch', merchantId: batch.merchant_id, batchId }, batch.created_at);
  return Response.json(await shard.stub.receiptCounts(shard.identity));
}

/** The path of a request URL, without the cost of a URL object on every request. */
function pathOf(url) {
  const start = url.indexOf('/', url.indexOf('//') + 2);
  const query = url.indexOf('?', start);
  return url.slice(start, query < 0 ? undefined : query);
}

/** "GET /api/filebatch/:id/download": ids (segments with digits, or long ones) replaced by :id. */
function routeOf(request) {
  const path = pathOf(request.url)
    .split('/')
    .map((segment) => (/[0-9]/.test(segment) || segment.length >= 16 ? ':id' : segment))
    .join('/');
  return `${request.method} ${path}`;
}

/** Wall time during which at least one request was active on an object, summed over objects. */
function objectBusyMs() {
  let total = 0;
  for (const intervals of totals.durableObjects.busy.values()) {
    intervals.sort((a, b) => a[0] - b[0]);
    let [start, end] = intervals[0];
    for (const [s, e] of intervals.slice(1)) {
      if (s > end) {
        total += end - start;
        [start, end] = [s, e];
      } else end = Math.max(end, e);
    }
    total += end - start;
  }
  return total;
}

function snapshot() {
  const d1 = [...totals.d1.entries()].map(([kind, t]) => ({ kind, ...t }));
  const cursors = totals.durableObjects.sqlCursors;
  const sum = (field) => cursors.reduce((n, c) => n + (Number(c[field]) || 0), 0);
  return {
    calls: [...totals.calls.entries()].map(([name, s]) => ({ name, calls: s.calls, ms: s.ms, paramBytes: s.paramBytes })).sort((a, b) => b.ms - a.ms),
    invocations: Object.fromEntries([...totals.invocations.entries()].map(([k, v]) => [k, v.count])),
    d1: {
      statements: d1.reduce((n, s) => n + s.statements, 0),
      rowsRead: d1.reduce((n, s) => n + s.rowsRead, 0),
      rowsWritten: d1.reduce((n, s) => n + s.rowsWritten, 0),
      sizeFirst: totals.d1SizeFirst,
      sizeLast: totals.d1SizeLast,
      byStatement: d1.sort((a, b) => b.rowsWritten - a.rowsWritten || b.rowsRead - a.rowsRead),
    },
    kv: Object.fromEntries(totals.kv.entries()),
    r2: totals.r2,
    queue: totals.queue,
    durableObjects: {
      requests: totals.durableObjects.requests,
      alarms: totals.durableObjects.alarms,
      objects: totals.durableObjects.busy.size,
      busyMs: totals.durableObjects.busy.size > 0 ? objectBusyMs() : 0,
      sqlStatements: totals.durableObjects.sqlStatements,
      sqlRowsRead: sum('rowsRead'),
      sqlRowsWritten: sum('rowsWritten') + totals.durableObjects.alarmRowsWritten,
      // Rows written by each class of object (the search index's share of a unit of work).
      rowsWrittenByClass: Object.fromEntries(
        [...totals.durableObjects.byClass].map(([label, t]) => [label, t.cursors.reduce((n, c) => n + (Number(c.rowsWritten) || 0), 0) + t.alarmRowsWritten]),
      ),
      requestsByClass: Object.fromEntries([...totals.durableObjects.requestsByClass].map(([binding, t]) => [binding, { requests: t.requests, objects: t.objects.size }])),
      // Bytes of ledger shards archived by /__bench/retention: what they held until then.
      ledgerBytesHeld: totals.durableObjects.ledgerBytesHeld,
      ...(totals.durableObjects.storageUncounted ? { storageUncounted: true } : {}),
    },
    rateLimiterCalls: totals.limiter,
    email: totals.email,
  };
}

const handler = {};
for (const [name, fn] of Object.entries(worker)) {
  handler[name] = (first, env, ctx) => fn.call(worker, first, wrapEnv(env), ctx);
}

const serviceQueue = handler.queue;
if (serviceQueue) {
  // Each delivered message is a read operation (per 64 KB); each one acknowledged, a delete.
  handler.queue = async (batch, env, ctx) => {
    add(totals.invocations, `queue ${batch.queue}`, { count: 1 });
    const q = totals.queue;
    const acked = new Set();
    const retried = new Set();
    const messages = batch.messages.map((message) => {
      q.deliveries += 1;
      q.readOps += queueOps(message.body);
      return new Proxy(message, {
        get(target, prop) {
          const value = Reflect.get(target, prop, target);
          if (prop === 'ack') return () => (acked.add(message), value.call(target));
          if (prop === 'retry') return (...args) => (retried.add(message), value.apply(target, args));
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    });
    const wrappedBatch = new Proxy(batch, {
      get(target, prop) {
        if (prop === 'messages') return messages;
        const value = Reflect.get(target, prop, target);
        if (prop === 'ackAll') return () => (batch.messages.forEach((m) => acked.add(m)), value.call(target));
        if (prop === 'retryAll') return (...args) => (batch.messages.forEach((m) => retried.add(m)), value.apply(target, args));
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    try {
      await serviceQueue(wrappedBatch, env, ctx);
    } catch (error) {
      // A thrown handler retries the whole delivery.
      batch.messages.forEach((m) => retried.add(m));
      throw error;
    } finally {
      for (const message of batch.messages) {
        if (retried.has(message) && !acked.has(message)) q.retries += 1;
        // A message neither acked nor retried is acknowledged when the handler returns.
        else q.deleteOps += queueOps(message.body);
      }
    }
  };
}

const serviceFetch = handler.fetch;
handler.fetch = (request, env, ctx) => {
  const pathname = pathOf(request.url);
  if (pathname === '/__bench/io') return Response.json(snapshot());
  if (pathname === '/__bench/retention' && request.method === 'POST') return benchRetention(request, env);
  if (pathname === '/__bench/receipts' && request.method === 'POST') return benchReceipts(request, env);
  if (pathname === '/__bench/search-seed' && request.method === 'POST') return benchSearchSeed(request, env);
  if (pathname === '/__bench/io/reset' && request.method === 'POST') {
    totals = emptyTotals();
    return new Response(null, { status: 204 });
  }
  add(totals.invocations, `fetch ${routeOf(request)}`, { count: 1 });
  return serviceFetch(request, env, ctx);
};

export default handler;
