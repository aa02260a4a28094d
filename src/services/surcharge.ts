/**
 * Surchargeability: may a surcharge be added for this card in this region? Card-network rules
 * allow it on credit cards only (never debit or prepaid, even when run as credit); a customer
 * flagged surcharge_exempt never pays one; the region's law comes from `surcharge_rules` (data,
 * not code). A region without a rule is not surchargeable.
 */
import type { Env } from '../env';
import { getCachedRules, putCachedRules, surchargeKey } from '../storage/bin-cache';
import { findRulesForRegion, type SurchargeRule } from '../storage/surcharge-rules';
import type { CardMetadata } from './bin-lookup';
import { cacheTtlSeconds, currentDataVersion } from './data-version';

export async function isSurchargeable(
  env: Env,
  card: CardMetadata,
  region: { country: string; state: string },
  options: { customerExempt: boolean; now: Date },
): Promise<boolean> {
  if (options.customerExempt || !isSurchargeableCard(card)) return false;
  const rule = ruleInForce(await rulesForRegion(env, region.country.toUpperCase(), region.state.toUpperCase()), options.now);
  if (!rule) return false;
  switch (rule.surcharge) {
    case 'allowed':
      return true;
    case 'prohibited':
      return false;
    case 'commercial_only':
      return card.commercial === true;
  }
}

/** Credit, and not prepaid (by flag or by a "prepaid" card level, as some datasets encode it). */
export function isSurchargeableCard(card: CardMetadata): boolean {
  if (card.card_type?.toLowerCase() !== 'credit') return false;
  if (card.prepaid === true) return false;
  return !(card.card_level_generic ?? '').toLowerCase().includes('prepaid');
}

/**
 * The rule in force on `now`: of each key (region or '*'), the row with the latest effective
 * date not after today; a rule for the exact region beats the country-wide one.
 */
export function ruleInForce(rules: readonly SurchargeRule[], now: Date): SurchargeRule | undefined {
  const today = now.toISOString().slice(0, 10);
  let regional: SurchargeRule | undefined;
  let national: SurchargeRule | undefined;
  for (const rule of rules) {
    if (rule.effective_from > today) continue;
    if (rule.region === '*') {
      if (!national || rule.effective_from > national.effective_from) national = rule;
    } else if (!regional || rule.effective_from > regional.effective_from) {
      regional = rule;
    }
  }
  return regional ?? national;
}

async function rulesForRegion(env: Env, country: string, region: string): Promise<SurchargeRule[]> {
  const key = surchargeKey(await currentDataVersion(env), country, region);
  const cached = await getCachedRules(env.BIN_CACHE, key);
  if (cached !== undefined) return cached;
  const rules = await findRulesForRegion(env.DB, country, region);
  await putCachedRules(env.BIN_CACHE, key, rules, cacheTtlSeconds(env));
  return rules;
}
