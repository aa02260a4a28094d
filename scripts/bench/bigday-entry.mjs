// Bench-only Worker entry for `npm run bench -- --only bigday` (never used by `npm run dev` or a
// deploy): the largest group's entry (the service unchanged, plus its settle and retention steps),
// with two things a bench needs and the local runtime does not report:
//   - rows written: every Durable Object's `ctx.storage.sql.exec` cursors' rowsWritten, summed per
//     object (by class and name), and D1's meta.rows_written of every statement the Worker and its
//     objects run; kept in this isolate's memory (every object of the script runs in this one
//     isolate under wrangler dev), read with POST /__bench/bigday/rows-written.
//   - an object's name and SQLite size from its id (the bench lists the objects from the local
//     state's SQLite files, by class, so it sizes whatever objects the code makes, under any names):
//     POST /__bench/bigday/object { binding, hex } → { name, bytes }.
// The counting wraps the service's classes and its D1 binding; it adds no storage and no I/O.
import largest, { LedgerShard as LargestLedgerShard } from './largest-entry.mjs';
import * as service from '../../src/index.ts';

export * from './largest-entry.mjs';

/** "Class name" → rows written by that object's SQL since the isolate started. */
const objectRows = new Map();
const d1 = { rowsWritten: 0, statements: 0, uncounted: 0 };

/** Counts the rows each of this object's cursors wrote (read when the next statement runs, or when asked). */
function countRows(ctx, key) {
  const sql = ctx.storage.sql;
  const exec = sql.exec.bind(sql);
  let pending = [];
  const entry = objectRows.get(key) ?? { rows: 0, flush: () => {} };
  entry.flush = () => {
    for (const cursor of pending) entry.rows += cursor.rowsWritten;
    pending = [];
  };
  objectRows.set(key, entry);
  sql.exec = (...args) => {
    entry.flush();
    const cursor = exec(...args);
    pending.push(cursor);
    return cursor;
  };
}

const counted = (result) => {
  d1.statements += 1;
  d1.rowsWritten += result?.meta?.rows_written ?? 0;
  return result;
};

function countedStatement(statement) {
  return new Proxy(statement, {
    get(target, prop) {
      // D1's batch() wants its own statements: a counted one answers the one it wraps.
      if (prop === '__target') return target;
      if (prop === 'bind') return (...args) => countedStatement(target.bind(...args));
      if (prop === 'run' || prop === 'all') return async (...args) => counted(await target[prop](...args));
      // first() answers no meta: run as all() (the same statement) and answer what first() would.
      if (prop === 'first') {
        return async (column) => {
          const row = counted(await target.all()).results[0] ?? null;
          return column === undefined || row === null ? row : (row[column] ?? null);
        };
      }
      if (prop === 'raw') d1.uncounted += 1;
      const value = Reflect.get(target, prop);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

function countedDb(db) {
  return new Proxy(db, {
    get(target, prop) {
      if (prop === 'prepare') return (query) => countedStatement(target.prepare(query));
      if (prop === 'batch') {
        return async (statements) => {
          const results = await target.batch(statements.map((s) => s.__target ?? s));
          for (const r of results) counted(r);
          return results;
        };
      }
      const value = Reflect.get(target, prop);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** The same env object for the same env (code may cache by it), with DB counted. */
const envs = new WeakMap();
function countedEnv(env) {
  if (!env?.DB) return env;
  let wrapped = envs.get(env);
  if (!wrapped) {
    wrapped = { ...env, DB: countedDb(env.DB) };
    envs.set(env, wrapped);
  }
  return wrapped;
}

/**
 * The object's name: its id's, or, for an object woken by its id alone (the bench's sizing), the one
 * the local state kept when it was first made (Miniflare's __miniflare_do_name table).
 */
function nameOf(ctx) {
  if (ctx.id.name) return ctx.id.name;
  try {
    return ctx.storage.sql.exec('SELECT name FROM __miniflare_do_name').one().name;
  } catch {
    return ctx.id.toString();
  }
}

/** A service class with its rows written counted and its name and size answerable. */
const measured = (Base, className) =>
  class extends Base {
    constructor(ctx, env) {
      // Before the base constructor: its own schema statements count too.
      countRows(ctx, `${className} ${nameOf(ctx)}`);
      super(ctx, countedEnv(env));
    }

    /** The object's name and SQLite size. */
    async benchObject() {
      return { name: nameOf(this.ctx), bytes: this.ctx.storage.sql.databaseSize };
    }
  };

export const LedgerShard = measured(LargestLedgerShard, 'LedgerShard');
export const BatchProgress = measured(service.BatchProgress, 'BatchProgress');
export const MerchantSettlement = measured(service.MerchantSettlement, 'MerchantSettlement');
export const ReceiptBudget = measured(service.ReceiptBudget, 'ReceiptBudget');
export const ReceiptPace = measured(service.ReceiptPace, 'ReceiptPace');
export const PendingUpload = measured(service.PendingUpload, 'PendingUpload');
export const RecurringBilling = measured(service.RecurringBilling, 'RecurringBilling');
export const CardDeclines = measured(service.CardDeclines, 'CardDeclines');
export const SandboxAcquirer = measured(service.SandboxAcquirer, 'SandboxAcquirer');
export const SearchDay = measured(service.SearchDay, 'SearchDay');
export const SearchDirectory = measured(service.SearchDirectory, 'SearchDirectory');
export const SearchKeys = measured(service.SearchKeys, 'SearchKeys');
export const TransactionExport = measured(service.TransactionExport, 'TransactionExport');

function rowsWritten() {
  const objects = [];
  for (const [key, entry] of objectRows) {
    entry.flush();
    const space = key.indexOf(' ');
    objects.push({ class: key.slice(0, space), name: key.slice(space + 1), rowsWritten: entry.rows });
  }
  return { objects, d1: { ...d1 } };
}

const routes = {
  '/__bench/bigday/rows-written': () => rowsWritten(),
  '/__bench/bigday/object': ({ binding, hex }, env) => env[binding].get(env[binding].idFromString(hex)).benchObject(),
};

export default {
  ...largest,
  async fetch(request, env, ctx) {
    const path = new URL(request.url).pathname;
    const route = request.method === 'POST' ? routes[path] : undefined;
    if (!route) return largest.fetch(request, countedEnv(env), ctx);
    try {
      return Response.json(await route(await request.json(), env));
    } catch (error) {
      return Response.json({ error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) }, { status: 500 });
    }
  },
  queue: (batch, env, ctx) => largest.queue(batch, countedEnv(env), ctx),
  scheduled: (controller, env, ctx) => largest.scheduled(controller, countedEnv(env), ctx),
};
