/**
 * A unit's row as the day object stores it, made by the caller that indexes it (a chunk's consumer,
 * an API request): the records packed and, for a chunk, gzip-compressed here, so the day object
 * shared by a merchant's day spends no CPU per record on a write and only inserts rows.
 */
import { gzipText } from '../../lib/gzip';
import { packRecord, type UnitInput, type UnitRow } from '../../storage/search/day';
import { parseTransactionId } from '../transactions/ledger';

export async function unitRow(unit: UnitInput): Promise<UnitRow> {
  const json = JSON.stringify(unit.records.map(packRecord));
  const compress = unit.records.length > 1;
  return {
    shard: unit.shard,
    page: unit.page,
    at: unit.at,
    count: unit.records.length,
    pending: unit.records.filter((r) => r.status === 'pending_settlement').length,
    members: unit.records.map((r) => memberOf(String(r.id))),
    format: compress ? 'gzip' : 'json',
    records: compress ? await gzipText(json) : json,
  };
}

/** What a unit's members list holds for a transaction: a batch row's line, else its id. */
export function memberOf(id: string): number | string {
  const parsed = parseTransactionId(id);
  return parsed?.kind === 'batch' ? parsed.line : id;
}
