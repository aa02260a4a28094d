/** D1 access for `surcharge_rules`: surcharge law by country and region, with effective dates. */

export type SurchargePolicy = 'allowed' | 'prohibited' | 'commercial_only';

export interface SurchargeRule {
  country: string;
  /** A region (state, province) code, or '*' for the whole country. */
  region: string;
  /** YYYY-MM-DD: the rule applies from this day (UTC) on. */
  effective_from: string;
  surcharge: SurchargePolicy;
  max_rate_bps: number | null;
  note: string | null;
}

/** The stored columns are exactly the rule's fields, so rows need no mapping. */
const RULE_COLUMNS = 'country, region, effective_from, surcharge, max_rate_bps, note';

/** Every rule for the country's region and for the whole country, any effective date. */
export async function findRulesForRegion(db: D1Database, country: string, region: string): Promise<SurchargeRule[]> {
  const { results } = await db
    .prepare(`SELECT ${RULE_COLUMNS} FROM surcharge_rules WHERE country = ?1 AND region IN (?2, '*') ORDER BY region, effective_from`)
    .bind(country, region)
    .all<SurchargeRule>();
  return results;
}

export async function listRules(db: D1Database): Promise<SurchargeRule[]> {
  const { results } = await db
    .prepare(`SELECT ${RULE_COLUMNS} FROM surcharge_rules ORDER BY country, region, effective_from`)
    .all<SurchargeRule>();
  return results;
}

/** Statements replacing the whole rule set, for one db.batch (a transaction). */
export function replaceRulesStatements(db: D1Database, rules: readonly SurchargeRule[]): D1PreparedStatement[] {
  const insert = db.prepare(
    `INSERT INTO surcharge_rules (country, region, effective_from, surcharge, max_rate_bps, note)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6)`,
  );
  return [
    db.prepare('DELETE FROM surcharge_rules'),
    ...rules.map((rule) =>
      insert.bind(rule.country, rule.region, rule.effective_from, rule.surcharge, rule.max_rate_bps, rule.note),
    ),
  ];
}
