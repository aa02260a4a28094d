/**
 * Surchargeability: may a surcharge be added for this card in this region? Card-network rules
 * allow it on credit cards only (never debit or prepaid, even when run as credit); a customer
 * flagged surcharge_exempt never pays one; the region's law comes from `surcharge_rules` (data,
 * not code). A region without a rule is not surchargeable.
 */
import type { Env } from '../../env';
import { MemoryCache } from '../../lib/memory-cache';
import { getCachedRules, putCachedRules, surchargeKey } from '../../storage/bin-cache';
import { findRulesForRegion, listRules, replaceRulesStatements, type SurchargeRule } from '../../storage/surcharge-rules';
import type { CardMetadata } from './card-metadata';
import { bumpLookupDataVersion, cacheTtlSeconds, currentDataVersion } from './data-version';

/** What the rules allow for one card in one region: whether, and up to which rate. */
export interface SurchargePolicy {
  allowed: boolean;
  /** The lowest cap in force (the region's law, the country's network rule), or null for none. */
  maxRateBps: number | null;
}

const NOT_ALLOWED: SurchargePolicy = { allowed: false, maxRateBps: null };

export async function surchargePolicy(
  env: Env,
  card: CardMetadata,
  region: { country: string; state: string },
  options: { customerExempt: boolean; now: Date },
): Promise<SurchargePolicy> {
  if (options.customerExempt || !isSurchargeableCard(card)) return NOT_ALLOWED;
  const rules = await rulesForRegion(env, region.country.toUpperCase(), region.state.toUpperCase());
  const { regional, national } = rulesInForce(rules, options.now);
  const rule = regional ?? national;
  if (!rule) return NOT_ALLOWED;
  const allowed = rule.surcharge === 'allowed' || (rule.surcharge === 'commercial_only' && card.commercial === true);
  if (!allowed) return NOT_ALLOWED;
  // A state's cap and the country-wide network cap both bind: Colorado's 2% under Visa's 3%.
  const caps = [regional?.max_rate_bps, national?.max_rate_bps].filter((cap): cap is number => typeof cap === 'number');
  return { allowed: true, maxRateBps: caps.length > 0 ? Math.min(...caps) : null };
}

export async function isSurchargeable(
  env: Env,
  card: CardMetadata,
  region: { country: string; state: string },
  options: { customerExempt: boolean; now: Date },
): Promise<boolean> {
  return (await surchargePolicy(env, card, region, options)).allowed;
}

/** Credit, and not prepaid (by flag or by a "prepaid" card level, as some datasets encode it). */
export function isSurchargeableCard(card: CardMetadata): boolean {
  if (card.card_type?.toLowerCase() !== 'credit') return false;
  if (card.prepaid === true) return false;
  return !(card.card_level_generic ?? '').toLowerCase().includes('prepaid');
}

/**
 * The rules in force on `now`: of each key (the region, and '*' for the whole country), the row
 * with the latest effective date not after today.
 */
export function rulesInForce(
  rules: readonly SurchargeRule[],
  now: Date,
): { regional: SurchargeRule | undefined; national: SurchargeRule | undefined } {
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
  return { regional, national };
}

/** The rule that decides: a rule for the exact region beats the country-wide one. */
export function ruleInForce(rules: readonly SurchargeRule[], now: Date): SurchargeRule | undefined {
  const { regional, national } = rulesInForce(rules, now);
  return regional ?? national;
}

/** Rules per (data version, country, region) kept in the isolate: a warm lookup reads no KV for them. */
const recentRules = new MemoryCache<SurchargeRule[]>(1_000);

async function rulesForRegion(env: Env, country: string, region: string): Promise<SurchargeRule[]> {
  const key = surchargeKey(await currentDataVersion(env), country, region);
  const remembered = recentRules.get(key);
  if (remembered !== undefined) return remembered;
  const cached = await getCachedRules(env.BIN_CACHE, key);
  if (cached !== undefined) return recentRules.set(key, cached);
  const rules = await findRulesForRegion(env.DB, country, region);
  await putCachedRules(env.BIN_CACHE, key, rules, cacheTtlSeconds(env));
  return recentRules.set(key, rules);
}

/** Every stored rule, history included. */
export function listSurchargeRules(env: Env): Promise<SurchargeRule[]> {
  return listRules(env.DB);
}

/** Replaces the whole rule set, then bumps the data version so no cached answer outlives it. */
export async function replaceSurchargeRules(
  env: Env,
  rules: Parameters<typeof replaceRulesStatements>[1],
  now: Date,
): Promise<SurchargeRule[]> {
  await env.DB.batch(replaceRulesStatements(env.DB, rules));
  await bumpLookupDataVersion(env, now);
  return listRules(env.DB);
}
