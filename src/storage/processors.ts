/** D1 access for the `processors` table. */
import type { ProcessorType } from '../schemas/admin';

export interface ProcessorRecord {
  id: string;
  merchant_id: string;
  type: ProcessorType;
  name: string;
  is_default: boolean;
  created_at: string;
}

interface ProcessorRow {
  id: string;
  merchant_id: string;
  type: ProcessorType;
  name: string;
  is_default: number;
  created_at: string;
}

function toProcessor(row: ProcessorRow): ProcessorRecord {
  return {
    id: row.id,
    merchant_id: row.merchant_id,
    type: row.type,
    name: row.name,
    is_default: row.is_default === 1,
    created_at: row.created_at,
  };
}

export async function listProcessors(db: D1Database, merchantId: string): Promise<ProcessorRecord[]> {
  const { results } = await db
    .prepare('SELECT * FROM processors WHERE merchant_id = ?1 ORDER BY created_at, id')
    .bind(merchantId)
    .all<ProcessorRow>();
  return results.map(toProcessor);
}

function insertStatement(db: D1Database, processor: ProcessorRecord, verb: 'INSERT' | 'INSERT OR IGNORE'): D1PreparedStatement {
  return db
    .prepare(
      `${verb} INTO processors (id, merchant_id, type, name, is_default, created_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6)`,
    )
    .bind(
      processor.id,
      processor.merchant_id,
      processor.type,
      processor.name,
      processor.is_default ? 1 : 0,
      processor.created_at,
    );
}

/** Inserts unless a processor with that id exists (concurrent first uses insert the same default once). */
export async function insertProcessorIfAbsent(db: D1Database, processor: ProcessorRecord): Promise<void> {
  await insertStatement(db, processor, 'INSERT OR IGNORE').run();
}

/** Adds a processor; a new default takes the flag from the previous one in the same batch. */
export async function insertProcessor(db: D1Database, processor: ProcessorRecord): Promise<void> {
  const insert = insertStatement(db, processor, 'INSERT');
  if (!processor.is_default) {
    await insert.run();
    return;
  }
  await db.batch([
    db.prepare('UPDATE processors SET is_default = 0 WHERE merchant_id = ?1 AND is_default = 1').bind(processor.merchant_id),
    insert,
  ]);
}
