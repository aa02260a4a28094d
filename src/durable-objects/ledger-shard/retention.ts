/**
 * A ledger shard's retention (docs/capacity.md, "A shard's jobs"): an API shard drops its request
 * hashes once the idempotency window of its last transaction is over, and every shard is archived to
 * R2 and emptied TRANSACTION_RETENTION_DAYS after its period began. Both run in bounded steps from a
 * cursor kept in the shard's meta, continued over alarm ticks: no invocation reads a whole table.
 */
import { ledgerArchiveKey, ledgerArchivePartKey, writeArchive } from '../../storage/ledger-archive';
import {
  archiveLine,
  clearPageHashes,
  listClaims,
  markHashesCleared,
  packRecord,
  pageBatch,
  readCursor,
  readMeta,
  statesAfter,
  writeCursor,
  type RetentionOutcome,
} from '../../storage/ledger-shard';
import { decodePage, type ShardContext } from './reading';

/**
 * What one invocation of retention may do: API page rows (about 1 KB each) whose hashes it clears,
 * and records it archives (one archive file each step). Measured in docs/capacity.md ("A shard's
 * jobs", `npm run bench -- --only largest`) against half of the 30 s CPU and 128 MB of an invocation.
 */
export interface RetentionBudget {
  hashRows?: number;
  archiveRecords?: number;
}
const HASH_ROWS_PER_STEP = 50_000;
const ARCHIVE_RECORDS_PER_STEP = 50_000;
/** Page rows read per query while archiving (a batch page holds up to 500 records, an API page one). */
const ARCHIVE_PAGES_PER_READ = 64;
/** Lines handed to the gzip stream at a time: what the step holds in memory besides one R2 part. */
const ARCHIVE_LINES_PER_WRITE = 1_000;
const ARCHIVE_STATES_PER_READ = 1_000;
/** Page rows read per query while clearing hashes (an API page row is about 1 KB). */
const HASH_ROWS_PER_READ = 1_000;

/** Where an archive stands: the next file, and the section and row it continues from. */
interface ArchiveCursor {
  part: number;
  section: 'claims' | 'pages' | 'states' | 'done';
  page: string | null;
  seq: number;
  stateId: string | null;
  lines: number;
}

/** Where hash clearing stands (the last page row passed). */
interface HashCursor {
  page: string | null;
  seq: number;
}

interface RetentionCursor {
  hashes?: HashCursor;
  archive?: ArchiveCursor;
}

/**
 * One step of the shard's retention at `now` (the alarm passes the real time; tests their own
 * clock): request hashes dropped once their window is over, then, past TRANSACTION_RETENTION_DAYS,
 * the next archive file written; once the last is written the object is emptied (`emptied` is
 * told, so memory forgets too). When more is left the alarm is armed at once. Safe to repeat;
 * answers what it did.
 */
export async function runRetention(shard: ShardContext, files: R2Bucket, now: string, emptied: () => void, budget: RetentionBudget = {}): Promise<RetentionOutcome> {
  const sql = shard.sql;
  const meta = readMeta(sql);
  const outcome: RetentionOutcome = { archived: false, key: null, lines: 0, hashesCleared: 0, more: false };
  if (!meta) return outcome;
  const cursor = readCursor<RetentionCursor>(sql, 'retention') ?? {};
  if (cursor.hashes || (meta.hashesClearAt !== null && meta.hashesClearAt <= now)) {
    const left = clearHashes(shard, cursor, budget.hashRows ?? HASH_ROWS_PER_STEP, outcome);
    if (left) return more(shard, outcome, now);
  }
  if (meta.archiveAt > now) {
    await shard.storage.setAlarm(Date.parse(meta.archiveAt));
    return outcome;
  }
  const merchantId = meta.name.split('/')[0] ?? '';
  const at: ArchiveCursor = cursor.archive ?? { part: 1, section: 'claims', page: null, seq: 0, stateId: null, lines: 0 };
  if (at.section !== 'done') {
    const reader = archiveReader(sql, merchantId, at, budget.archiveRecords ?? ARCHIVE_RECORDS_PER_STEP);
    // Nothing left (the last step ended exactly at the end): no empty file.
    const first = await reader();
    if (first !== null) {
      let handed = false;
      const written = await writeArchive(files, ledgerArchivePartKey(meta.name, at.part), async () => (handed ? reader() : ((handed = true), first)));
      at.part += 1;
      at.lines += written;
    }
    // The file is whole in R2: the cursor moves past it (a step that dies before this writes the same file again).
    writeCursor(sql, 'retention', { archive: at });
    outcome.lines = at.lines;
    if (!finished(at)) return more(shard, outcome, now);
  }
  await shard.storage.deleteAll();
  shard.pages?.clear();
  emptied();
  const key = ledgerArchiveKey(meta.name);
  console.log(JSON.stringify({ level: 'info', event: 'ledger_archived', shard: meta.name, archive: key, files: at.part - 1, records: outcome.lines }));
  return { ...outcome, archived: true, key, more: false };
}

/** Clears hashes within the step's budget; answers whether rows are left. */
function clearHashes(shard: ShardContext, cursor: RetentionCursor, budget: number, outcome: RetentionOutcome): boolean {
  const sql = shard.sql;
  // Page rows are rewritten here (the only change a page row's records ever get): none kept decoded.
  shard.pages?.clear();
  let at: HashCursor = cursor.hashes ?? { page: null, seq: 0 };
  if (!cursor.hashes) {
    // From the first step on, records written late keep no hash either (`complete` reads hashesClearAt).
    shard.storage.transactionSync(() => {
      markHashesCleared(sql);
      writeCursor(sql, 'retention', { hashes: at });
    });
  }
  for (let rows = 0; rows < budget; rows += HASH_ROWS_PER_READ) {
    const from = at;
    // Each read, its updates and the cursor commit together: a step cut short resumes where it stopped.
    const last = shard.storage.transactionSync(() => {
      const result = clearPageHashes(sql, from.page === null ? null : { page: from.page, seq: from.seq }, Math.min(HASH_ROWS_PER_READ, budget - rows));
      outcome.hashesCleared += result.cleared;
      writeCursor(sql, 'retention', result.last ? { hashes: result.last } : null);
      return result.last;
    });
    if (!last) return false;
    at = last;
  }
  return true;
}

function finished(at: ArchiveCursor): boolean {
  return at.section === 'done';
}

/** Arms the alarm at once for the next step and says so. */
async function more(shard: ShardContext, outcome: RetentionOutcome, now: string): Promise<RetentionOutcome> {
  await shard.storage.setAlarm(Math.max(Date.parse(now), Date.now()));
  return { ...outcome, more: true };
}

/**
 * The lines of one archive file: from `at` on, claims (an attempt never answered in 18 months is
 * archived as it stands, status `processing`), then pages, then states (their current records, after
 * the pages: a later line wins), until `limit` records; moves `at` past what it handed out.
 */
function archiveReader(sql: SqlStorage, merchantId: string, at: ArchiveCursor, limit: number): () => Promise<string[] | null> {
  let written = 0;
  let pagesRead = 0;
  let recordsRead = 0;
  return async () => {
    while (written < limit && at.section !== 'done') {
      if (at.section === 'claims') {
        at.section = 'pages';
        // Open claims are few (the chunks in flight when the shard was last written).
        const lines = listClaims(sql, merchantId).flatMap((claim) => claim.entries.map((stored) => archiveLine(merchantId, packRecord(stored))));
        written += lines.length;
        if (lines.length > 0) return lines;
        continue;
      }
      if (at.section === 'pages') {
        // About ARCHIVE_LINES_PER_WRITE lines at a time: as many pages as that many records take,
        // judged from the pages read so far (a batch page holds up to 500 records, an API page one).
        const lines: string[] = [];
        const wanted = () => Math.min(ARCHIVE_LINES_PER_WRITE - lines.length, limit - written - lines.length);
        while (wanted() > 0) {
          const perPage = pagesRead > 0 ? recordsRead / pagesRead : ARCHIVE_LINES_PER_WRITE;
          const pages = Math.max(1, Math.min(ARCHIVE_PAGES_PER_READ, Math.floor(wanted() / perPage)));
          const rows = pageBatch(sql, at.page === null ? null : { page: at.page, seq: at.seq }, pages);
          const last = rows.at(-1);
          if (!last) {
            at.section = 'states';
            break;
          }
          at.page = last.page;
          at.seq = last.seq;
          for (const row of rows) {
            const packedRecords = await decodePage(row);
            pagesRead += 1;
            recordsRead += packedRecords.length;
            for (const packed of packedRecords) lines.push(archiveLine(merchantId, packed));
          }
        }
        written += lines.length;
        if (lines.length > 0) return lines;
        continue;
      }
      const states = statesAfter(sql, merchantId, at.stateId, Math.min(ARCHIVE_STATES_PER_READ, limit - written));
      const last = states.at(-1);
      if (!last) {
        at.section = 'done';
        break;
      }
      at.stateId = String(last.stored.record.id);
      written += states.length;
      return states.map((state) => archiveLine(merchantId, packRecord(state.stored)));
    }
    return null;
  };
}
