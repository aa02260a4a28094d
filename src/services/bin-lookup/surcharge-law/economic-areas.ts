/**
 * Economic areas whose members' cards count as issued "in the same area" as a sale in another
 * member (a rule's issuer_region `area`). One today: the European Economic Area, the area of
 * PSD2 and the Interchange Fee Regulation (EU 2015/751), whose surcharge ban covers consumer cards
 * issued and acquired inside it.
 *
 * Source: the EEA Agreement's parties, https://www.efta.int/eea/eea-agreement and the EU's member
 * states, https://european-union.europa.eu/principles-countries-history/eu-countries_en (the 27
 * EU members plus Iceland, Liechtenstein and Norway). The United Kingdom was a member until the end
 * of the Brexit transition period, 2020-12-31 (https://www.gov.uk/guidance/brexit-transition);
 * Croatia's EEA membership applies provisionally from 2014-04-12 (EU member since 2013-07-01).
 */

interface Membership {
  /** First and last day of membership (YYYY-MM-DD, inclusive); absent = before 1994 / still a member. */
  from?: string;
  until?: string;
}

export const EEA: Readonly<Record<string, Membership>> = {
  AT: {}, BE: {}, BG: {}, HR: { from: '2014-04-12' }, CY: {}, CZ: {}, DK: {}, EE: {}, FI: {}, FR: {},
  DE: {}, GR: {}, HU: {}, IE: {}, IT: {}, LV: {}, LT: {}, LU: {}, MT: {}, NL: {}, PL: {}, PT: {},
  RO: {}, SK: {}, SI: {}, ES: {}, SE: {}, IS: {}, LI: {}, NO: {},
  GB: { until: '2020-12-31' },
};

/** The EEA's members on a date; the shipped EU/EEA rules are one per member. */
export function eeaMembers(date: string): string[] {
  return Object.keys(EEA).filter((country) => isEeaMember(country, date));
}

export function isEeaMember(country: string, date: string): boolean {
  const membership = EEA[country];
  if (!membership) return false;
  return (membership.from === undefined || membership.from <= date) && (membership.until === undefined || date <= membership.until);
}
