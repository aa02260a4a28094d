/**
 * The surcharge decision for one card at one place of sale and instant, from the rules (pure: the
 * service hands in the rules). docs/bin-lookup.md "Surcharge rules" is the prose of this module:
 *
 * - Place: the rules of the country ('*') and of the region both apply; a region the data does not
 *   know, in a country whose law differs by region, is not surchargeable.
 * - Time: a rule takes effect at local midnight of its `effective_from` at the place of sale.
 * - Lines: rules with the same layer, place and conditions are one line; of each line the latest
 *   rule in force applies (an operator's over the release's on the same date).
 * - Layers: every applying rule that names the card must allow, at least one must, and the cap is
 *   the lowest of theirs.
 * - An unknown card fact (a BIN without funding, commercial flag or country) never satisfies a
 *   condition of an allowing rule, and always satisfies one of a prohibiting rule: unknown fails closed.
 */
import type { CardClass, Funding, IssuerRegion, SurchargeRule } from '../../storage/surcharge-rules';
import type { CardMetadata } from './card-metadata';
import { isEeaMember } from './surcharge-law/economic-areas';
import { isKnownRegion, localDate, timeZoneOf } from './surcharge-law/places';

/** What the rules allow for one card at one place and time: whether, up to which rate, and only at cost. */
export interface SurchargePolicy {
  allowed: boolean;
  /** The lowest numeric cap of the allowing rules, in basis points; null for none. */
  maxRateBps: number | null;
  /** A rule limits the surcharge to the merchant's cost of acceptance (its configured rate must not exceed it). */
  atCost: boolean;
}

export const NOT_ALLOWED: SurchargePolicy = { allowed: false, maxRateBps: null, atCost: false };

export interface Place {
  country: string;
  region: string;
}

/** The card facts rules are conditioned on; null = the BIN data does not know. */
export interface CardFacts {
  brand: string | null;
  funding: Funding | null;
  cardClass: CardClass | null;
  issuerRegion: IssuerRegion | null;
}

/**
 * A card's funding as the rules see it: prepaid (by flag, or a card level naming it, as some
 * datasets encode it) before its type; a charge card (paid in full each period) and a deferred
 * debit card (the same, as European issuers call it; the IFR counts both as credit) are `charge`.
 */
export function fundingOf(card: Pick<CardMetadata, 'card_type' | 'prepaid' | 'card_level_generic'>): Funding | null {
  if (card.prepaid === true || (card.card_level_generic ?? '').toLowerCase().includes('prepaid')) return 'prepaid';
  switch (card.card_type?.toLowerCase()) {
    case 'credit':
      return 'credit';
    case 'charge':
    case 'deferred_debit':
      return 'charge';
    case 'debit':
      return 'debit';
    default:
      return null;
  }
}

/** Where the card was issued relative to the place of sale, on `date` (EEA membership has dates). */
export function issuerRegionOf(issuerCountry: string | undefined, placeCountry: string, date: string): IssuerRegion | null {
  if (!issuerCountry) return null;
  const issuer = issuerCountry.toUpperCase();
  if (issuer === placeCountry) return 'domestic';
  if (isEeaMember(issuer, date) && isEeaMember(placeCountry, date)) return 'area';
  return 'foreign';
}

export function cardFacts(card: CardMetadata, placeCountry: string, date: string): CardFacts {
  return {
    brand: card.card_brand?.toLowerCase() ?? null,
    funding: fundingOf(card),
    cardClass: card.commercial === true ? 'commercial' : card.commercial === false ? 'consumer' : null,
    issuerRegion: issuerRegionOf(card.country, placeCountry, date),
  };
}

const sorted = (values: readonly string[]) => [...values].sort().join(',');

/** A rule's line: its layer, place and conditions (not its date, verdict or origin). */
function lineOf(rule: SurchargeRule): string {
  return [
    rule.layer,
    rule.country,
    rule.region,
    sorted(rule.brands),
    sorted(rule.except_brands),
    sorted(rule.funding),
    rule.card_class ?? '',
    sorted(rule.issuer_region),
  ].join('|');
}

/** Of each line, the rule in force on `date` (YYYY-MM-DD): the latest not after it, the operator's on a tie. */
export function rulesInForce(rules: readonly SurchargeRule[], date: string): SurchargeRule[] {
  const lines = new Map<string, SurchargeRule>();
  for (const rule of rules) {
    if (rule.effective_from > date) continue;
    const line = lineOf(rule);
    const current = lines.get(line);
    const newer =
      !current ||
      rule.effective_from > current.effective_from ||
      (rule.effective_from === current.effective_from && rule.origin === 'operator');
    if (newer) lines.set(line, rule);
  }
  return [...lines.values()];
}

type Fit = 'yes' | 'no' | 'unknown';

/** Whether the card meets every condition of the rule ('unknown' when a fact it needs is unknown). */
function fit(rule: SurchargeRule, card: CardFacts): Fit {
  const checks: Fit[] = [];
  const check = (active: boolean, fact: string | null, holds: (fact: string) => boolean) => {
    if (active) checks.push(fact === null ? 'unknown' : holds(fact) ? 'yes' : 'no');
  };
  check(rule.brands.length > 0, card.brand, (brand) => rule.brands.includes(brand));
  check(rule.except_brands.length > 0, card.brand, (brand) => !rule.except_brands.includes(brand));
  check(rule.funding.length > 0, card.funding, (funding) => rule.funding.includes(funding as Funding));
  check(rule.card_class !== null, card.cardClass, (cardClass) => cardClass === rule.card_class);
  check(rule.issuer_region.length > 0, card.issuerRegion, (region) => rule.issuer_region.includes(region as IssuerRegion));
  if (checks.includes('no')) return 'no';
  return checks.includes('unknown') ? 'unknown' : 'yes';
}

/**
 * The decision for a card at a place and instant. `rules` may hold any rules: those of other
 * places are left out here.
 */
export function decideSurcharge(rules: readonly SurchargeRule[], card: CardMetadata, place: Place, now: Date): SurchargePolicy {
  if (!isKnownRegion(place.country, place.region)) return NOT_ALLOWED;
  const date = localDate(now, timeZoneOf(place.country, place.region));
  const facts = cardFacts(card, place.country, date);
  const here = rules.filter((rule) => rule.country === place.country && (rule.region === '*' || rule.region === place.region));

  let allowing = 0;
  let maxRateBps: number | null = null;
  let atCost = false;
  for (const rule of rulesInForce(here, date)) {
    const fits = fit(rule, facts);
    if (fits === 'no') continue;
    // An allowance needs the card to be known to fit; a prohibition applies when it may fit.
    if (rule.surcharge === 'allowed' && fits === 'unknown') continue;
    const allows = rule.surcharge === 'allowed' || (rule.surcharge === 'commercial_only' && fits === 'yes' && facts.cardClass === 'commercial');
    if (!allows) return NOT_ALLOWED;
    allowing += 1;
    if (rule.max_rate_bps !== null) maxRateBps = maxRateBps === null ? rule.max_rate_bps : Math.min(maxRateBps, rule.max_rate_bps);
    atCost ||= rule.at_cost;
  }
  return allowing > 0 ? { allowed: true, maxRateBps, atCost } : NOT_ALLOWED;
}

/**
 * The surcharge the merchant may add to `amount` (minor units): its rate, limited by the cap in
 * force, rounded half up to a whole minor unit but never above the cap (2% of 1,999 is 39, not
 * 40). Not allowed: 0. The lookup's `amount` and a sale's computed surcharge both come from here.
 */
export function allowedSurcharge(
  amount: number,
  merchantRateBps: number,
  policy: Pick<SurchargePolicy, 'allowed' | 'maxRateBps'>,
): { rateBps: number; surcharge: number } {
  if (!policy.allowed) return { rateBps: 0, surcharge: 0 };
  const rateBps = policy.maxRateBps === null ? merchantRateBps : Math.min(merchantRateBps, policy.maxRateBps);
  let surcharge = surchargeFor(amount, rateBps);
  if (policy.maxRateBps !== null) surcharge = Math.min(surcharge, Math.floor((amount * policy.maxRateBps) / 10_000));
  return { rateBps, surcharge };
}

/** amount x rate, rounded half up: 1999 at 300 bps = 59.97 -> 60. Integers stay exact up to 2^53 (99,999,999,999 x 10,000 is under it). */
export function surchargeFor(amount: number, rateBps: number): number {
  return Math.floor((amount * rateBps + 5_000) / 10_000);
}
