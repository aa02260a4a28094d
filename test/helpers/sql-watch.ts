/**
 * Watching the statements a Durable Object's SQLite runs, for tests that count cost in what does not
 * depend on the machine (statements, rows read and written): the object's `sql.exec` is wrapped,
 * each statement handed to `seen` with its cursor, and put back by the function answered.
 */
import { runInDurableObject } from 'cloudflare:test';

export interface WatchedStatement {
  query: string;
  bindings: unknown[];
  cursor: SqlStorageCursor<Record<string, SqlStorageValue>>;
}

/** Wraps `sql.exec` until the answered function is called. */
export function watchSql(sql: SqlStorage, seen: (statement: WatchedStatement) => void): () => void {
  const exec = sql.exec.bind(sql);
  (sql as { exec: SqlStorage['exec'] }).exec = ((query: string, ...bindings: unknown[]) => {
    const cursor = exec(query, ...bindings);
    seen({ query, bindings, cursor });
    return cursor;
  }) as SqlStorage['exec'];
  return () => {
    (sql as { exec: SqlStorage['exec'] }).exec = exec;
  };
}

/** Runs `work` (calls from outside the object) with the object's statements watched throughout. */
export async function watchObjectSql(stub: DurableObjectStub, seen: (statement: WatchedStatement) => void, work: () => Promise<unknown>): Promise<void> {
  const unwatch = await runInDurableObject(stub, (_instance, state) => watchSql(state.storage.sql, seen));
  try {
    await work();
  } finally {
    await runInDurableObject(stub, () => unwatch());
  }
}

/** The rows the statements read. */
export function rowsReadOf(statements: readonly WatchedStatement[]): number {
  return statements.reduce((sum, { cursor }) => sum + cursor.rowsRead, 0);
}

/** The rows the statements wrote. */
export function rowsWrittenOf(statements: readonly WatchedStatement[]): number {
  return statements.reduce((sum, { cursor }) => sum + cursor.rowsWritten, 0);
}
