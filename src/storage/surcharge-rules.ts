/**
 * D1 access for the surcharge rules: every rule (both origins) and the operator's rule set, which
 * PUT /admin/surcharge-rules replaces. The rows, their mapping and the shipped rules' SQL:
 * surcharge-rules-sql.ts (Node loads it too).
 */
import { D1, HALF } from '../lib/platform-limits';
import { COLUMNS, JSON_SELECT, toRow, toRule, type RuleRow, type SurchargeRule, type SurchargeRuleFields } from './surcharge-rules-sql';

export type {
  CardClass,
  Funding,
  IssuerRegion,
  RuleLayer,
  RuleOrigin,
  RuleVerdict,
  SurchargeRule,
  SurchargeRuleFields,
} from './surcharge-rules-sql';
export { MAX_OPERATOR_RULES, MAX_SHIPPED_RULES, shippedRulesSql, storedList } from './surcharge-rules-sql';

/**
 * Every rule, both origins, history included. Bounded by MAX_SHIPPED_RULES + MAX_OPERATOR_RULES
 * rows (surcharge-rules-sql.ts), so one query answers them all.
 */
export async function listRules(db: D1Database): Promise<SurchargeRule[]> {
  const { results } = await db
    .prepare(`SELECT ${COLUMNS.join(', ')} FROM surcharge_rules_v2 ORDER BY country, region, layer, effective_from, origin`)
    .all<RuleRow>();
  return results.map(toRule);
}

/**
 * Rules per statement when they travel as one JSON parameter: a rule is at most about 1 KB (a note
 * of 500 characters and its conditions), so 500 of them stay under HALF of D1's 2 MB for a string.
 */
const OPERATOR_RULES_PER_STATEMENT = Math.floor((D1.rowBytes * HALF) / 2_000);

/**
 * Statements replacing the operator's rules (the shipped ones stay), for one db.batch (a
 * transaction). Each statement carries a chunk of rules as one bound JSON parameter.
 */
export function replaceOperatorRulesStatements(db: D1Database, rules: readonly SurchargeRuleFields[]): D1PreparedStatement[] {
  const insert = db.prepare(
    `INSERT INTO surcharge_rules_v2 (${COLUMNS.join(', ')})
     SELECT 'operator', ${JSON_SELECT} FROM json_each(?1) WHERE true`,
  );
  const statements = [db.prepare("DELETE FROM surcharge_rules_v2 WHERE origin = 'operator'")];
  for (let start = 0; start < rules.length; start += OPERATOR_RULES_PER_STATEMENT) {
    statements.push(insert.bind(JSON.stringify(rules.slice(start, start + OPERATOR_RULES_PER_STATEMENT).map(toRow))));
  }
  return statements;
}

