/**
 * Surchargeability: may a surcharge be added for this card at this place of sale, and up to which
 * rate? The card networks' rules and the law are data (`surcharge_rules_v2`: the rules the release
 * ships plus the operator's own); surcharge-decision.ts applies them. A customer flagged
 * surcharge_exempt never pays one.
 */
import type { Env } from '../../env';
import { listRules, replaceOperatorRulesStatements, type SurchargeRule, type SurchargeRuleFields } from '../../storage/surcharge-rules';
import type { CardMetadata } from './card-metadata';
import { bumpLookupDataVersion, currentDataVersion } from './data-version';
import { decideSurcharge, NOT_ALLOWED, rulesInForce, type SurchargePolicy } from './surcharge-decision';

export type { SurchargePolicy } from './surcharge-decision';
export { allowedSurcharge, surchargeFor } from './surcharge-decision';

export async function surchargePolicy(
  env: Env,
  card: CardMetadata,
  region: { country: string; state: string },
  options: { customerExempt: boolean; now: Date },
): Promise<SurchargePolicy> {
  if (options.customerExempt) return NOT_ALLOWED;
  const country = region.country.toUpperCase();
  const rules = (await rulesByCountry(env)).get(country) ?? [];
  return decideSurcharge(rules, card, { country, region: region.state.toUpperCase() }, options.now);
}

export async function isSurchargeable(
  env: Env,
  card: CardMetadata,
  region: { country: string; state: string },
  options: { customerExempt: boolean; now: Date },
): Promise<boolean> {
  return (await surchargePolicy(env, card, region, options)).allowed;
}

/**
 * The whole rule set, by country, kept in the isolate for the data version it was read at (every
 * rule change and BIN import bumps it): a warm lookup reads no rules from D1 or KV. It is small
 * (MAX_SHIPPED_RULES + MAX_OPERATOR_RULES rows at most, storage/surcharge-rules-sql.ts), so one read
 * serves every place; a failed read is not remembered.
 */
let memo: { version: number; rules: Promise<ReadonlyMap<string, SurchargeRule[]>> } | undefined;

async function rulesByCountry(env: Env): Promise<ReadonlyMap<string, SurchargeRule[]>> {
  const version = await currentDataVersion(env);
  if (memo?.version !== version) memo = { version, rules: readRules(env, version) };
  return memo.rules;
}

async function readRules(env: Env, version: number): Promise<ReadonlyMap<string, SurchargeRule[]>> {
  try {
    const byCountry = new Map<string, SurchargeRule[]>();
    for (const rule of await listRules(env.DB)) {
      const rules = byCountry.get(rule.country);
      if (rules) rules.push(rule);
      else byCountry.set(rule.country, [rule]);
    }
    return byCountry;
  } catch (err) {
    if (memo?.version === version) memo = undefined;
    throw err;
  }
}

export interface RuleFilter {
  /** Only the rules in force on this local date (YYYY-MM-DD), one per line. */
  inForceOn?: string | undefined;
  country?: string | undefined;
  /** With `country`: the rules that apply in this region (its own and the whole country's). */
  region?: string | undefined;
  origin?: SurchargeRule['origin'] | undefined;
}

/** The stored rules, history included, or those in force on a date; optionally of one place or origin. */
export async function listSurchargeRules(env: Env, filter: RuleFilter = {}): Promise<SurchargeRule[]> {
  let rules = await listRules(env.DB);
  if (filter.country !== undefined) rules = rules.filter((rule) => rule.country === filter.country);
  if (filter.region !== undefined) rules = rules.filter((rule) => rule.region === '*' || rule.region === filter.region);
  // In force before the origin filter: an operator's rule may supersede a shipped one.
  if (filter.inForceOn !== undefined) {
    const inForce = new Set(rulesInForce(rules, filter.inForceOn));
    rules = rules.filter((rule) => inForce.has(rule));
  }
  if (filter.origin !== undefined) rules = rules.filter((rule) => rule.origin === filter.origin);
  return rules;
}

/**
 * Replaces the operator's rules (the release's stay: they are the shipped law, kept current by
 * each release), then bumps the data version so no answer outlives the change. Answers the
 * operator's rules now stored.
 */
export async function replaceOperatorRules(env: Env, rules: readonly SurchargeRuleFields[], now: Date): Promise<SurchargeRule[]> {
  await env.DB.batch(replaceOperatorRulesStatements(env.DB, rules));
  await bumpLookupDataVersion(env, now);
  return listSurchargeRules(env, { origin: 'operator' });
}
