/**
 * The search's bounds per invocation (docs/capacity.md, "Search"), each named against the platform
 * limit it keeps half of (src/lib/platform-limits.ts).
 */
import { HALF, RPC, WORKERS } from '../../lib/platform-limits';

/**
 * Day objects one search asks (a day's parts, services/search/names.ts: a day in one part is one,
 * a big merchant's day up to 8): each at most twice (positions, then the page's records), plus at
 * most WEEK_PARTS_AT_MOST week objects and the directory (one call: the days and their parts),
 * within half of the 1,000 subrequests planned. A day is asked whole (all its parts) or not at all.
 */
export const MAX_SEARCH_PARTS = 192;
/**
 * Week objects (a week's parts) an `order_id` or `customer_id` search asks: 80 weeks (548 days) of
 * a merchant in one part, 14 weeks of one in 8. A window whose weeks have more is read as any
 * filter is, over its days.
 */
export const WEEK_PARTS_AT_MOST = 112;
const DIRECTORY_CALLS = 1;
if (MAX_SEARCH_PARTS * 2 + WEEK_PARTS_AT_MOST + DIRECTORY_CALLS > WORKERS.subrequestsPlanned * HALF) throw new Error('MAX_SEARCH_PARTS exceeds the subrequest budget');

/**
 * Records a day object reads (gunzip and JSON) in one call: about 5 µs each measured, so about 1 s
 * of CPU, far inside half of the 30 s an invocation may use. A day with more is counted as far as
 * the budget goes, and the answer says its count is a lower bound.
 */
export const SCAN_BUDGET_RECORDS = 200_000;
const MICROSECONDS_PER_RECORD = 5;
if ((SCAN_BUDGET_RECORDS * MICROSECONDS_PER_RECORD) / 1000 > WORKERS.cpuMsPerInvocation * HALF) throw new Error('SCAN_BUDGET_RECORDS exceeds the CPU budget');

/**
 * Rows one search reads in all (records decoded, or index entries counted), over every day it asks:
 * each day's call gets its share of what is left. A first page counts its window only as far as
 * this goes; past it `total_count` is a lower bound and `total_count_exact` false, and the page
 * still ends with a cursor where reading stopped. 2,000,000 rows are about 10 s of CPU spread over
 * the day objects asked, and $0.002 of rows read, whatever the merchant's volume.
 */
export const SEARCH_ROWS_READ_MAX = 2_000_000;
/** The least a day is asked to read: below it the search stops asking and says its count is not exact. */
export const DAY_READ_MIN = 1_000;

/** Deepest `offset` (FluidPay's paging): positions cost about 100 bytes each in an RPC answer. */
export const MAX_OFFSET = 10_000;
export const MAX_LIMIT = 100;
const POSITION_BYTES = 100;
if ((MAX_OFFSET + MAX_LIMIT) * POSITION_BYTES > RPC.payloadBytes * HALF) throw new Error('MAX_OFFSET exceeds the RPC answer budget');

/** Days asked for positions at once while the page is not full yet (older days are only counted). */
export const DAY_WAVE = 8;
/** Day objects (a day's parts) asked at once, for positions or for their counts. */
export const DAY_CONCURRENCY = 32;

/** References of one value a week object answers (12 bytes each); a value more common falls back to the window's days. */
export const KEY_REFS_MAX = 100_000;
if (KEY_REFS_MAX * 12 > RPC.payloadBytes * HALF) throw new Error('KEY_REFS_MAX exceeds the RPC answer budget');

/** Transaction ids per settlement call to a day object (about 40 bytes each). */
export const SETTLED_IDS_PER_CALL = 20_000;
if (SETTLED_IDS_PER_CALL * 40 > RPC.payloadBytes * HALF) throw new Error('SETTLED_IDS_PER_CALL exceeds the RPC budget');

/** Records per page an export reads (1.5 KB each in the RPC answer). */
export const EXPORT_PAGE_RECORDS = 1_000;
if (EXPORT_PAGE_RECORDS * 1_500 > RPC.payloadBytes * HALF) throw new Error('EXPORT_PAGE_RECORDS exceeds the RPC answer budget');
