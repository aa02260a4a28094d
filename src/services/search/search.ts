/**
 * `POST /api/transaction/search` as a service (docs/transactions.md, "Search"): FluidPay's request
 * turned into conditions and a window (or the cursor's), the search run, and FluidPay's answer with
 * binbatch's additions (`total_count_exact`, `window`, `next_cursor`).
 */
import type { Env } from '../../env';
import type { Clock } from '../../lib/time';
import type { TransactionSearchBody } from '../../schemas/transaction-search';
import type { TransactionRecordView } from '../../schemas/transaction-response';
import { runSearch } from './query';
import { openCursor, signCursor } from './cursor';
import { filtersFingerprint, searchConditions, searchWindow, type SearchWindow } from './request';

export interface SearchAnswer {
  status: 'success';
  msg: 'success';
  total_count: number;
  total_count_exact: boolean;
  data: TransactionRecordView[];
  window: { start_date: string; end_date: string | null; defaulted: boolean };
  limit: number;
  offset: number;
  next_cursor: string | null;
}

export type SearchOutcome = { ok: true; answer: SearchAnswer } | { ok: false; field: string; message: string };

export async function searchTransactions(env: Env, merchantId: string, body: TransactionSearchBody, clock: Clock): Promise<SearchOutcome> {
  const { limit, offset, cursor: cursorText, ...filters } = body;
  const conditions = searchConditions(filters);
  if (!conditions.ok) return conditions;
  const fingerprint = filtersFingerprint(filters);
  let window: SearchWindow;
  let carried: { totalCount: number; exact: boolean } | null = null;
  let after = null;
  if (cursorText !== undefined) {
    const cursor = await openCursor(env.CARD_DATA_KEY, merchantId, cursorText);
    if (cursor === null) return { ok: false, field: 'cursor', message: 'is not a cursor this search answered' };
    if (cursor.filters !== fingerprint) return { ok: false, field: 'cursor', message: 'was made for other filters: send the filters of the search it came from' };
    window = cursor.window;
    after = cursor.after;
    carried = { totalCount: cursor.totalCount, exact: cursor.exact };
  } else {
    const parsed = searchWindow(filters.created_at, clock());
    if (!parsed.ok) return parsed;
    window = parsed.value;
  }
  const page = await runSearch(env, merchantId, { conditions: conditions.value, window, limit, offset, after, count: carried === null }, clock);
  const totalCount = carried?.totalCount ?? page.totalCount;
  const exact = carried?.exact ?? page.exact;
  return {
    ok: true,
    answer: {
      status: 'success',
      msg: 'success',
      total_count: totalCount,
      total_count_exact: exact,
      // The record as GET /api/transaction/{id} answers it (query.ts), FluidPay's fields included: its SDK reads a search's records as it reads Get's.
      data: page.records,
      window: { start_date: window.from, end_date: window.to, defaulted: window.defaulted },
      limit,
      offset,
      next_cursor: page.next === null ? null : await signCursor(env.CARD_DATA_KEY, merchantId, { after: page.next, window, totalCount, exact, filters: fingerprint }),
    },
  };
}
