/**
 * The sandbox acquirer under one merchant's busy day (issue 29, item 6): one object per processor
 * and day sees every file and API charge of the merchant, so what one call costs must not grow with
 * what the day already holds. A charge finds earlier charges of its keys, and a lookup finds a key,
 * by the key's block (storage/sandbox-calls.ts), never by re-reading a window of calls; entries are
 * stored compactly; lookups of many keys are one call per day.
 */
import { env } from 'cloudflare:workers';
import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { sandboxAcquirerName, SandboxProcessor } from '../../src/services/transactions/processors/sandbox';
import { createChargeTable, recordCharges, findCharges, type SandboxChargeEntry } from '../../src/storage/sandbox-calls';
import { meterInvocation } from '../helpers/invocation-meter';
import { rowsReadOf, rowsWrittenOf, watchSql, type WatchedStatement } from '../helpers/sql-watch';

const DAY = '2026-12-03';
const NOW = `${DAY}T12:00:00.000Z`;
const APPROVED = JSON.stringify({
  response: 'approved',
  responseCode: 100,
  amountAuthorized: 1000,
  authCode: 'AB12CD',
  processorResponseCode: '00',
  processorResponseText: 'APPROVED',
  avsResponseCode: 'Y',
  cvvResponseCode: 'M',
});

/** A chunk's charges: rows `firstLine`… of a batch, keyed `{batch}:{line}` as the engine keys them. */
function chunk(batchId: string, firstLine: number, rows = 500): SandboxChargeEntry[] {
  return Array.from({ length: rows }, (_, i) => ({
    idempotencyKey: `${batchId}:${firstLine + i}`,
    type: 'sale',
    amount: 1_000 + i,
    paymentType: 'card' as const,
    result: APPROVED.replace('AB12CD', `A${String(firstLine + i).padStart(5, '0')}`),
  }));
}

function acquirer(processorId: string) {
  return env.SANDBOX_ACQUIRER.getByName(sandboxAcquirerName(processorId, DAY));
}

/** Rows SQLite read for the statements `run` makes on the object's storage. */
function rowsReadDuring<T>(sql: SqlStorage, run: () => T): { answer: T; rowsRead: number } {
  const statements: WatchedStatement[] = [];
  const unwatch = watchSql(sql, (statement) => statements.push(statement));
  try {
    const answer = run();
    return { answer, rowsRead: rowsReadOf(statements) };
  } finally {
    unwatch();
  }
}

describe('one merchant\'s day in one acquirer object', () => {
  it('a charge and a lookup read their own keys\' blocks, the same with 40 chunks in the day as with one', async () => {
    /** Rows read by a fresh chunk, a chunk sent again and a lookup, on an object holding `chunks`. */
    const rowsRead = async (name: string, chunks: (readonly [file: string, firstLine: number])[]) => {
      const stub = acquirer(name);
      for (const [file, firstLine] of chunks) {
        const answer = await stub.charge(DAY, chunk(file, firstLine), NOW, NOW);
        expect('answers' in answer).toBe(true);
      }
      return runInDurableObject(stub, (_instance, state) => {
        const sql = state.storage.sql;
        // A new chunk of another file: its two blocks are empty.
        const fresh = rowsReadDuring(sql, () => recordCharges(sql, NOW, chunk('bat_busy9', 2)));
        expect(fresh.answer.size).toBe(500);
        // A chunk sent again: its first answers come back.
        const again = rowsReadDuring(sql, () => recordCharges(sql, NOW, chunk('bat_busy3', 502).map((e) => ({ ...e, result: APPROVED }))));
        expect(again.answer.get('bat_busy3:502')).toContain('A00502');
        // A lookup of one key reads its block.
        const lookup = rowsReadDuring(sql, () => findCharges(sql, ['bat_busy5:1700', 'bat_busy5:99999']));
        expect([...lookup.answer.keys()]).toEqual(['bat_busy5:1700']);
        return { fresh: fresh.rowsRead, again: again.rowsRead, lookup: lookup.rowsRead };
      });
    };
    // 40 chunks of 500 rows from 8 files, as a merchant's files running side by side would send them.
    const busy = await rowsRead('sandbox_busy_day', Array.from({ length: 40 }, (_, i) => [`bat_busy${Math.floor(i / 5)}`, 2 + (i % 5) * 500] as const));
    // The two files the calls above name, alone in their day.
    const quiet = await rowsRead('sandbox_quiet_day', Array.from({ length: 10 }, (_, i) => [i < 5 ? 'bat_busy3' : 'bat_busy5', 2 + (i % 5) * 500] as const));
    // The other six files' chunk rows are not read: the same rows as in a day of those two files
    // alone (the keys' lists and their blocks' own rows, a few dozen at most).
    expect(busy).toEqual(quiet);
    expect(Math.max(busy.fresh, busy.again, busy.lookup)).toBeLessThanOrEqual(20);
  });

  it("a chunk of captures (a block per transaction: each key's prefix names it) is read and written in a few statements", async () => {
    const stub = acquirer('sandbox_operations');
    const captures = (answer: (result: string) => string) =>
      chunk('bat_ops', 2).map((entry, i) => ({ ...entry, idempotencyKey: `txn_${String(i).padStart(4, '0')}x:capture:${entry.idempotencyKey}`, type: 'capture', result: answer(entry.result) }));
    await runInDurableObject(stub, async (_instance, state) => {
      const sql = state.storage.sql;
      createChargeTable(sql);
      const exec = sql.exec.bind(sql);
      let statements = 0;
      (sql as { exec: SqlStorage['exec'] }).exec = ((query: string, ...bindings: unknown[]) => {
        statements++;
        return exec(query, ...bindings);
      }) as SqlStorage['exec'];
      try {
        expect(recordCharges(sql, NOW, captures((result) => result)).size).toBe(500);
        // Sent again with other answers: each key's first answer comes back.
        const again = recordCharges(sql, NOW, captures((result) => result.replace('approved', 'declined')));
        expect(again.get('txn_0007x:capture:bat_ops:9')).toContain('A00009');
        expect(again.get('txn_0007x:capture:bat_ops:9')).toContain('approved');
        expect(findCharges(sql, ['txn_0499x:capture:bat_ops:501', 'txn_0500x:capture:bat_ops:502']).size).toBe(1);
      } finally {
        (sql as { exec: SqlStorage['exec'] }).exec = exec;
      }
      // Two calls and a lookup; a statement or two per block was 2,001.
      expect(statements).toBeLessThanOrEqual(10);
    });
  });

  it("a chunk of captures in an object made with operation blocks reads its one or two blocks, not a block per transaction's prefix", async () => {
    const stub = acquirer('sandbox_operation_blocks_only');
    const captures = (firstLine: number) =>
      chunk('bat_oponly', firstLine).map((entry, i) => ({ ...entry, idempotencyKey: `txn_${String(firstLine + i).padStart(5, '0')}x:capture:${entry.idempotencyKey}`, type: 'capture' }));
    // Made as the service makes it: a charge creates the object's tables.
    expect('answers' in (await stub.charge(DAY, captures(2), NOW, NOW))).toBe(true);
    await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      const statements: WatchedStatement[] = [];
      const unwatch = watchSql(sql, (statement) => statements.push(statement));
      try {
        // Lines 502-1001, sent once; then lines 2-501 sent again: their first answers.
        expect(recordCharges(sql, NOW, captures(502)).size).toBe(500);
        const again = recordCharges(sql, NOW, captures(2).map((entry) => ({ ...entry, result: entry.result.replace('approved', 'declined') })));
        expect(again.get('txn_00009x:capture:bat_oponly:9')).toContain('approved');
      } finally {
        unwatch();
      }
      // Each call names the blocks it reads in one JSON array: two blocks, where it named 502.
      const named = statements.filter((statement) => /FROM json_each\(\?\) AS named/.test(statement.query)).map((statement) => (JSON.parse(String(statement.bindings[0])) as string[]).length);
      expect(named).toEqual([2, 2]);
    });
  });

  it("a chunk of captures writes a row or two, not one per transaction, and a key charged in its transaction's own block before still answers first", async () => {
    const stub = acquirer('sandbox_operation_blocks');
    const captures = (firstLine: number, answer: (result: string) => string = (result) => result) =>
      chunk('bat_opblocks', firstLine).map((entry, i) => ({ ...entry, idempotencyKey: `txn_${String(firstLine + i).padStart(5, '0')}x:capture:${entry.idempotencyKey}`, type: 'capture', result: answer(entry.result) }));
    await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      // An object made before operation blocks (it lacks the table that says it was made with them),
      createChargeTable(sql);
      sql.exec('DROP TABLE operation_blocks_only');
      // charged then: a row in the block the key's own prefix named.
      const old = captures(2)[7];
      if (!old) throw new Error('no entry');
      const packed = [['9', old.type, old.amount, old.paymentType, Object.values(JSON.parse(old.result) as Record<string, unknown>)]];
      sql.exec("INSERT INTO charges (block, seq, at, kind, entries) VALUES (?, 1, ?, 'charge', ?)", 'txn_00009x:capture:bat_opblocks:#0', `${DAY}T11:00:00.000Z`, JSON.stringify(packed));
      const before = sql.databaseSize;
      const statements: WatchedStatement[] = [];
      const unwatch = watchSql(sql, (statement) => statements.push(statement));
      let answers: Map<string, string>;
      try {
        answers = recordCharges(sql, NOW, captures(2, (result) => result.replace('approved', 'declined')));
      } finally {
        unwatch();
      }
      // The key charged before answers its first answer; the others their own.
      expect(answers.get('txn_00009x:capture:bat_opblocks:9')).toContain('approved');
      expect(answers.get('txn_00010x:capture:bat_opblocks:10')).toContain('declined');
      // Lines 2-501 are two blocks of 500: two rows written, where a block per transaction wrote 500.
      expect(rowsWrittenOf(statements)).toBeLessThanOrEqual(4);
      expect(sql.databaseSize - before).toBeLessThan(500 * 200);
      // Found again, by a charge and by a lookup.
      expect(recordCharges(sql, NOW, captures(2, (result) => result.replace('approved', 'declined'))).get('txn_00009x:capture:bat_opblocks:9')).toContain('approved');
      expect(findCharges(sql, ['txn_00009x:capture:bat_opblocks:9', 'txn_00300x:capture:bat_opblocks:300', 'txn_00300x:capture:bat_opblocks:3000']).size).toBe(2);
    });
    const listed = (await stub.list()).filter((row) => row.idempotencyKey === 'txn_00009x:capture:bat_opblocks:9');
    expect(listed).toEqual([expect.objectContaining({ type: 'capture', chargeCalls: 3 })]);
    expect(listed[0]?.result).toContain('approved');
  });

  it('stores a charge in under a third of the bytes the object-per-entry JSON took', async () => {
    const stub = acquirer('sandbox_compact');
    const before = await runInDurableObject(stub, (_instance, state) => state.storage.sql.databaseSize);
    for (let c = 0; c < 10; c++) await stub.charge(DAY, chunk('bat_compactfile00000000', 2 + c * 500), NOW, NOW);
    const after = await runInDurableObject(stub, (_instance, state) => state.storage.sql.databaseSize);
    const perCharge = (after - before) / 5_000;
    // The old rows held each entry as an object with the answer as escaped JSON: 330 bytes.
    expect(perCharge).toBeLessThan(100);
  });

  it('a key sent again in the same day answers its first answer, whatever else came between', async () => {
    const stub = acquirer('sandbox_first_answer');
    const first = await stub.charge(DAY, [{ idempotencyKey: 'api-key-1', type: 'sale', amount: 500, paymentType: 'card', result: APPROVED }], NOW, NOW);
    await stub.charge(DAY, chunk('bat_between', 2), NOW, NOW);
    const declined = APPROVED.replace('"approved"', '"declined"');
    const again = await stub.charge(DAY, [{ idempotencyKey: 'api-key-1', type: 'sale', amount: 500, paymentType: 'card', result: declined }], NOW, NOW);
    expect(again).toEqual(first);
    const rows = (await stub.list()).filter((row) => row.idempotencyKey === 'api-key-1');
    expect(rows).toEqual([{ idempotencyKey: 'api-key-1', type: 'sale', amount: 500, paymentType: 'card', result: APPROVED, chargeCalls: 2, lookupCalls: 0, createdAt: NOW }]);
  });

  it('an object made before blocks is still read: its charges are found and answered first', async () => {
    const stub = acquirer('sandbox_legacy');
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec('CREATE TABLE calls (at TEXT NOT NULL, id TEXT NOT NULL, kind TEXT NOT NULL, entries TEXT NOT NULL, PRIMARY KEY (at, id)) WITHOUT ROWID');
      const entries = [{ idempotencyKey: 'legacy-1', type: 'sale', amount: 700, paymentType: 'card', result: APPROVED }];
      state.storage.sql.exec("INSERT INTO calls (at, id, kind, entries) VALUES (?, 'x', 'charge', ?)", NOW, JSON.stringify(entries));
    });
    expect(await stub.lookup([{ key: 'legacy-1', claimedAt: NOW }], NOW)).toEqual({ 'legacy-1': APPROVED });
    const declined = APPROVED.replace('"approved"', '"declined"');
    const again = await stub.charge(DAY, [{ idempotencyKey: 'legacy-1', type: 'sale', amount: 700, paymentType: 'card', result: declined }], NOW, NOW);
    expect(again).toEqual({ answers: { 'legacy-1': APPROVED } });
    expect((await stub.list()).find((row) => row.idempotencyKey === 'legacy-1')).toMatchObject({ chargeCalls: 2, lookupCalls: 1 });
  });
});

describe('lookups from one invocation', () => {
  it('200 claims settled at once make one call to the acquirer of their day, not one per key', async () => {
    const processorId = 'sandbox_many_lookups';
    await acquirer(processorId).charge(DAY, chunk('bat_lookups', 2), NOW, NOW);
    const meter = meterInvocation(env);
    const processor = new SandboxProcessor(meter.env.SANDBOX_ACQUIRER, processorId, () => new Date(NOW));
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => processor.lookup(`bat_lookups:${2 + i * 2}`, NOW)));
    expect(answers.every((answer) => answer?.response === 'approved')).toBe(true);
    expect(await processor.lookup('bat_lookups:9999', NOW)).toBeNull();
    expect(meter.subrequests.get('SANDBOX_ACQUIRER')).toBe(2);
  });
});
