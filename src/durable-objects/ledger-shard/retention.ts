/**
 * A ledger shard's retention (docs/capacity.md): an API shard drops its request hashes once the
 * idempotency window of its last transaction is over, and every shard is archived to R2 and
 * emptied TRANSACTION_RETENTION_DAYS after its period began.
 */
import { ledgerArchiveKey, writeArchive } from '../../storage/ledger-archive';
import {
  allStates,
  archiveLine,
  clearPageHashes,
  listClaims,
  markHashesCleared,
  packRecord,
  pageBatch,
  readMeta,
  type RetentionOutcome,
} from '../../storage/ledger-shard';
import { decodePage, type ShardContext } from './reading';

/** Pages read per step while archiving (each page a chunk's records). */
const ARCHIVE_PAGES_PER_READ = 20;

/**
 * The shard's retention at `now` (the alarm passes the real time; tests their own clock): request
 * hashes dropped once their window is over, then, past TRANSACTION_RETENTION_DAYS, every record
 * written to R2 and the object emptied (`emptied` is told, so memory forgets too). Safe to repeat;
 * answers what it did.
 */
export async function runRetention(shard: ShardContext, files: R2Bucket, now: string, emptied: () => void): Promise<RetentionOutcome> {
  const meta = readMeta(shard.sql);
  const outcome: RetentionOutcome = { archived: false, key: null, lines: 0, hashesCleared: 0 };
  if (!meta) return outcome;
  if (meta.hashesClearAt !== null && meta.hashesClearAt <= now) {
    shard.storage.transactionSync(() => {
      outcome.hashesCleared = clearPageHashes(shard.sql);
      markHashesCleared(shard.sql);
    });
  }
  if (meta.archiveAt > now) {
    await shard.storage.setAlarm(Date.parse(meta.archiveAt));
    return outcome;
  }
  const merchantId = meta.name.split('/')[0] ?? '';
  const key = ledgerArchiveKey(meta.name);
  let after: { page: string; seq: number } | null = null;
  let claimsSent = false;
  let statesSent = false;
  const sql = shard.sql;
  outcome.lines = await writeArchive(files, key, async () => {
    if (!claimsSent) {
      claimsSent = true;
      // A claim never answered in 18 months is archived as it stands (status `processing`).
      return listClaims(sql, merchantId).flatMap((claim) => claim.entries.map((stored) => archiveLine(merchantId, packRecord(stored))));
    }
    const rows = pageBatch(sql, after, ARCHIVE_PAGES_PER_READ);
    const last = rows.at(-1);
    if (!last) {
      if (statesSent) return null;
      statesSent = true;
      // Transactions changed since processed, and refunds: their current records, after the pages (a later line wins).
      return allStates(sql, merchantId).map((state) => archiveLine(merchantId, packRecord(state.stored)));
    }
    after = { page: last.page, seq: last.seq };
    const lines: string[] = [];
    for (const row of rows) for (const packed of await decodePage(row)) lines.push(archiveLine(merchantId, packed));
    return lines;
  });
  await shard.storage.deleteAll();
  emptied();
  console.log(JSON.stringify({ level: 'info', event: 'ledger_archived', shard: meta.name, archive: key, records: outcome.lines }));
  return { ...outcome, archived: true, key };
}
