/**
 * A validate-only upload's look at the ledger (docs/batch.md, "Checking a file before it runs"):
 * each capture, void and refund row that names a transaction id is checked against that
 * transaction as it is now, with the rules the run applies (services/transactions/lifecycle-rules.ts,
 * `checkOperation`): an unknown id or another merchant's, an archived one, the wrong state, an
 * amount over what is left. Read only: nothing is claimed, charged or written.
 *
 * Rows are checked in groups of up to LEDGER_CHECK_ROWS, one read per ledger shard a group names
 * (records come back whole: a group of 2,000 is a few MB of RPC answers, far under 32 MiB). The
 * reads of one validate request stop at LEDGER_CHECK_CALLS, under half of the 1,000 subrequests
 * planned per invocation (src/lib/platform-limits.ts); the rows past it are counted as not checked
 * against the ledger, and the run checks them as it reaches them. A row naming `line:N` (a
 * transaction made earlier in the same file) is checked by the run, not here: the file has not run
 * yet. (No two rows of a file name the same transaction: file-checks.ts refuses such a file.)
 */
import type { Env } from '../../env';
import type { RowError } from '../../schemas/transaction-columns';
import type { OperationKind } from '../../storage/ledger-shard';
import { WORKERS } from '../../lib/platform-limits';
import { locateMany } from '../transactions/locate-many';
import { authorizationExpiryDays, checkOperation, expiresBefore } from '../transactions/lifecycle-rules';
import { TRANSACTION_ID_COLUMN } from './lifecycle-rows';

/** Rows checked in one group (one read per shard the group names). */
export const LEDGER_CHECK_ROWS = 2_000;
/** Subrequests one validate request spends on ledger reads (batch rows' D1 lookups and shard reads). */
export const LEDGER_CHECK_CALLS = 400;
if (LEDGER_CHECK_CALLS > WORKERS.subrequestsPlanned / 2) throw new Error('the ledger checks of a validate request could pass half the planned subrequests');

export interface LedgerRow {
  line: number;
  kind: OperationKind;
  transactionId: string;
  amount: number | null;
}

export interface LedgerRefusal {
  row: LedgerRow;
  errors: RowError[];
}

export class LedgerCheck {
  #calls = 0;
  checked = 0;
  unchecked = 0;

  constructor(
    readonly env: Env,
    readonly merchantId: string,
    readonly now: Date,
  ) {}

  /** The rows of `rows` a run would refuse, with why; rows past the call budget are counted unchecked. */
  async check(rows: readonly LedgerRow[]): Promise<LedgerRefusal[]> {
    if (rows.length === 0) return [];
    // A group's reads: one shard read per shard it names, and one D1 read more for a batch's (its
    // batch row says whose it is). Checked against the budget before the group runs.
    const estimate = [...new Set(rows.map((row) => shardHint(row.transactionId)))].reduce((calls, hint) => calls + (hint.startsWith('txn_b') ? 2 : 1), 0);
    if (this.#calls + estimate > LEDGER_CHECK_CALLS) {
      this.unchecked += rows.length;
      return [];
    }
    this.#calls += estimate;
    this.checked += rows.length;
    const locations = await locateMany(this.env, this.merchantId, rows.map((row) => row.transactionId), this.now);
    const refusals: LedgerRefusal[] = [];
    const groups = new Map<string, { located: Extract<(typeof locations)[number], { ok: true }>; rows: LedgerRow[]; ids: string[]; exact: string[]; floor: string[] }>();
    rows.forEach((row, index) => {
      const located = locations[index];
      if (!located || !located.ok) {
        const message = located?.reason === 'archived' ? `transaction archived: ${located.archive}` : 'no transaction of this merchant has this id';
        refusals.push({ row, errors: [{ field: TRANSACTION_ID_COLUMN, msg: message }] });
        return;
      }
      const group = groups.get(located.shard.identity.name) ?? { located, rows: [], ids: [], exact: [], floor: [] };
      group.rows.push(row);
      group.ids.push(...located.query.ids);
      group.exact.push(...located.query.exact);
      group.floor.push(...located.query.floor);
      groups.set(located.shard.identity.name, group);
    });
    const current = { expiredBefore: expiresBefore(this.now, authorizationExpiryDays(this.env.AUTHORIZATION_EXPIRY_DAYS)) };
    await Promise.all(
      [...groups.values()].map(async ({ located, rows: groupRows, ids, exact, floor }) => {
        const { shard } = located;
        const found = await shard.stub.find(shard.identity, { ids: unique(ids), exact: unique(exact), floor: unique(floor), current });
        const byId = new Map(found.filter((stored) => stored.record.status !== 'processing').map((stored) => [String(stored.record.id), stored]));
        for (const row of groupRows) {
          const stored = byId.get(row.transactionId);
          if (!stored) {
            refusals.push({ row, errors: [{ field: TRANSACTION_ID_COLUMN, msg: 'no transaction of this merchant has this id' }] });
            continue;
          }
          const verdict = checkOperation(row.kind, stored.record, stored.amountRefunded ?? 0, row.amount);
          if (!verdict.ok) refusals.push({ row, errors: [{ field: verdict.reason === 'amount' ? 'amount' : TRANSACTION_ID_COLUMN, msg: verdict.message }] });
        }
      }),
    );
    return refusals;
  }
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}

/** Enough of an id to tell its shard apart from another's (for the budget's estimate only). */
function shardHint(id: string): string {
  return id.startsWith('txn_b') ? id.slice(0, 33) : id.slice(0, 13) + (/s[1-7]$/.exec(id)?.[0] ?? '');
}
