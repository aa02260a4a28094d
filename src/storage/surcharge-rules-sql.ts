/**
 * The surcharge rules' rows (`surcharge_rules_v2`, `surcharge_rules_state`) and the SQL that applies
 * the rules the release ships. That SQL is text, not bound statements, because `npm run dev` and
 * the deploy steps run it with `wrangler d1 execute --file` (scripts/surcharge-rules.mjs) and the
 * tests run the same text: so this module is loaded by Node too, and imports nothing Node could not
 * load (`.ts` file names) nor the Workers types. D1 access proper: surcharge-rules.ts.
 */
import { D1, HALF, WORKERS } from '../lib/platform-limits.ts';

export type RuleOrigin = 'shipped' | 'operator';
/** Who makes the rule: a card network (its rules for acceptance) or the law of the place. */
export type RuleLayer = 'network' | 'law';
/** `commercial_only` (the first model's): allowed on commercial cards, prohibited on the others. */
export type RuleVerdict = 'allowed' | 'prohibited' | 'commercial_only';
export type Funding = 'credit' | 'debit' | 'prepaid' | 'charge';
export type CardClass = 'consumer' | 'commercial';
/** Where the card was issued, relative to the place of sale: its country, its economic area (EEA), elsewhere. */
export type IssuerRegion = 'domestic' | 'area' | 'foreign';

/** A rule without its origin: what the release ships and what an operator puts. Empty lists = any card. */
export interface SurchargeRuleFields {
  layer: RuleLayer;
  country: string;
  /** A region (state, province) code, or '*' for the whole country. */
  region: string;
  /** YYYY-MM-DD: the rule applies from local midnight of this day at the place of sale. */
  effective_from: string;
  brands: string[];
  except_brands: string[];
  funding: Funding[];
  card_class: CardClass | null;
  issuer_region: IssuerRegion[];
  surcharge: RuleVerdict;
  /** The highest rate allowed, in basis points; null for no numeric cap. */
  max_rate_bps: number | null;
  /** Only up to the merchant's cost of acceptance (taken to be the merchant's configured rate). */
  at_cost: boolean;
  note: string | null;
}

export interface SurchargeRule extends SurchargeRuleFields {
  origin: RuleOrigin;
}

/**
 * The most rules the table holds: the release's (test/unit/shipped-surcharge-rules.test.ts keeps
 * them under 500) plus the operator's (PUT takes at most 1,000). The whole set is read in one query
 * and kept in each isolate's memory.
 */
export const MAX_SHIPPED_RULES = 500;
export const MAX_OPERATOR_RULES = 1_000;
/**
 * The rule set's memory at its largest: a rule is at most about 2 KB of text (a 500-character note,
 * 30 brand ids, its fields), 4 KB as UTF-16 strings; 6 MB in all, a tenth of HALF an isolate's
 * memory (test/unit/shipped-surcharge-rules.test.ts holds it there).
 */
export const RULE_SET_MAX_BYTES = (MAX_SHIPPED_RULES + MAX_OPERATOR_RULES) * 4_000;
export const RULE_SET_MEMORY_BUDGET = (WORKERS.isolateMemoryBytes * HALF) / 10;

export interface RuleRow {
  origin: RuleOrigin;
  layer: RuleLayer;
  country: string;
  region: string;
  effective_from: string;
  brands: string;
  except_brands: string;
  funding: string;
  card_class: string;
  issuer_region: string;
  surcharge: RuleVerdict;
  max_rate_bps: number | null;
  at_cost: number;
  note: string | null;
}

export const COLUMNS = [
  'origin',
  'layer',
  'country',
  'region',
  'effective_from',
  'brands',
  'except_brands',
  'funding',
  'card_class',
  'issuer_region',
  'surcharge',
  'max_rate_bps',
  'at_cost',
  'note',
] as const;
/** The key of a stored rule: its origin, place, layer, date and conditions (the table's primary key). */
const KEY_COLUMNS = COLUMNS.slice(0, 10).join(', ');

const list = (text: string): string[] => (text === '' ? [] : text.split(','));
/** A condition list as stored: sorted, comma-joined, '' for any; so equal conditions have equal keys. */
export const storedList = (values: readonly string[]): string => [...new Set(values)].sort().join(',');

export function toRule(row: RuleRow): SurchargeRule {
  return {
    origin: row.origin,
    layer: row.layer,
    country: row.country,
    region: row.region,
    effective_from: row.effective_from,
    brands: list(row.brands),
    except_brands: list(row.except_brands),
    funding: list(row.funding) as Funding[],
    card_class: row.card_class === '' ? null : (row.card_class as CardClass),
    issuer_region: list(row.issuer_region) as IssuerRegion[],
    surcharge: row.surcharge,
    max_rate_bps: row.max_rate_bps,
    at_cost: row.at_cost === 1,
    note: row.note,
  };
}

/** A rule as the JSON that json_each expands (the row's columns, lists joined). */
export function toRow(rule: SurchargeRuleFields): Omit<RuleRow, 'origin'> {
  return {
    layer: rule.layer,
    country: rule.country,
    region: rule.region,
    effective_from: rule.effective_from,
    brands: storedList(rule.brands),
    except_brands: storedList(rule.except_brands),
    funding: storedList(rule.funding),
    card_class: rule.card_class ?? '',
    issuer_region: storedList(rule.issuer_region),
    surcharge: rule.surcharge,
    max_rate_bps: rule.max_rate_bps,
    at_cost: rule.at_cost ? 1 : 0,
    note: rule.note,
  };
}

/** The columns a json_each row fills, in COLUMNS order after the origin. */
export const JSON_SELECT = COLUMNS.slice(1)
  .map((column) => `json_extract(value, '$.${column}')`)
  .join(', ');

/** The largest statement of the shipped-rules SQL: HALF of D1's statement limit. */
const SHIPPED_STATEMENT_BYTES = D1.statementBytes * HALF;

const sqlText = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** An identifier of a release of the shipped rules: the first 16 hex digits of their SHA-256. */
export async function shippedRelease(rules: readonly SurchargeRuleFields[]): Promise<string> {
  const bytes = new TextEncoder().encode(JSON.stringify(rules.map(toRow)));
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return [...digest.slice(0, 8)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

/**
 * The SQL statements (each ending with ";") that bring the table to this release of the shipped
 * rules: an upsert keyed by place, layer, date and conditions (a corrected verdict, cap or note
 * replaces the stored one), then the removal of shipped rows of earlier releases, a data version
 * bump (cached lookups are never served from older rules), and the release recorded. Operator rows
 * are never touched. Idempotent: once the release is recorded, running it again changes nothing.
 * Each upsert carries its rules as a JSON literal and stays under SHIPPED_STATEMENT_BYTES.
 */
export async function shippedRulesSql(rules: readonly SurchargeRuleFields[]): Promise<string[]> {
  const release = await shippedRelease(rules);
  const pending = `(SELECT shipped_release FROM surcharge_rules_state WHERE id = 1) IS NOT ${sqlText(release)}`;
  const upsert = (json: string) =>
    `INSERT INTO surcharge_rules_v2 (${COLUMNS.join(', ')}, shipped_release)
SELECT 'shipped', ${JSON_SELECT}, ${sqlText(release)} FROM json_each(${sqlText(json)}) WHERE ${pending}
ON CONFLICT (${KEY_COLUMNS}) DO UPDATE SET surcharge = excluded.surcharge, max_rate_bps = excluded.max_rate_bps,
  at_cost = excluded.at_cost, note = excluded.note, shipped_release = excluded.shipped_release;`;
  const overhead = new TextEncoder().encode(upsert('')).length;

  const statements: string[] = [];
  let chunk: string[] = [];
  let bytes = overhead;
  const flush = () => {
    if (chunk.length > 0) statements.push(upsert(`[${chunk.join(',')}]`));
    chunk = [];
    bytes = overhead;
  };
  for (const rule of rules) {
    const json = JSON.stringify(toRow(rule));
    // Quotes double inside the SQL literal; a comma joins rules.
    const size = new TextEncoder().encode(json.replaceAll("'", "''")).length + 1;
    if (overhead + size > SHIPPED_STATEMENT_BYTES) throw new Error(`a shipped rule is too large for one statement (${rule.country}/${rule.region})`);
    if (bytes + size > SHIPPED_STATEMENT_BYTES) flush();
    chunk.push(json);
    bytes += size;
  }
  flush();

  const now = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";
  statements.push(
    `DELETE FROM surcharge_rules_v2 WHERE origin = 'shipped' AND shipped_release IS NOT ${sqlText(release)} AND ${pending};`,
    `UPDATE bin_data_version SET version = version + 1, updated_at = ${now} WHERE id = 1 AND ${pending};`,
    `UPDATE surcharge_rules_state SET shipped_release = ${sqlText(release)}, shipped_applied_at = ${now} WHERE id = 1 AND ${pending};`,
  );
  return statements;
}
