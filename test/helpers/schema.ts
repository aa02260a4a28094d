import { SHIPPED_RULES } from '../../src/services/bin-lookup/surcharge-law/shipped-rules';
import { shippedRulesSql, type SurchargeRuleFields } from '../../src/storage/surcharge-rules';

/** Splits schema.sql into statements (each ends with ";" at the end of a line) and runs them in one batch. */
export async function applySchema(db: D1Database, schema: string): Promise<void> {
  const statements = schema
    .split(/;\s*$/m)
    .map((statement) => statement.replace(/^\s*--.*$/gm, '').trim())
    .filter((statement) => statement.length > 0);
  if (statements.length === 0) throw new Error('schema.sql is empty or was not handed to the tests');
  await db.batch(statements.map((statement) => db.prepare(statement)));
}

/** The shipped surcharge rules' SQL (the same text scripts/surcharge-rules.mjs runs), in one batch. */
export async function applyShippedSurchargeRules(db: D1Database, rules: readonly SurchargeRuleFields[] = SHIPPED_RULES): Promise<void> {
  const statements = await shippedRulesSql(rules);
  await db.batch(statements.map((statement) => db.prepare(statement)));
}
