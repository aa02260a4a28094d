/**
 * The places of sale the surcharge rules know: each country's time zone (a rule takes effect at
 * local midnight), the time zone of regions that differ from their country's, and, for the
 * countries whose law differs by region (US, Canada, Australia), the complete list of their region
 * codes: another code there is a place the data does not know, and is not surchargeable (it could
 * be a state that bans surcharges, mistyped).
 *
 * Region codes are ISO 3166-2 subdivision codes without the country (https://www.iso.org/obp/ui/#search,
 * e.g. US-CO → CO, AU-NSW → NSW, CA-QC → QC); US territories are also codes of the US, as USPS and
 * ISO 3166-2:US spell them. Time zones are IANA names (https://www.iana.org/time-zones). A region that
 * spans zones takes the zone of its capital and largest cities (Texas: Central; Florida: Eastern;
 * Indiana: Eastern), so a rule may begin an hour later or earlier there than the law says for its
 * western or eastern part. A country not listed here is answered in UTC.
 */

interface Place {
  timeZone: string;
  /** Regions whose zone differs from the country's. */
  zones?: Readonly<Record<string, string>>;
  /** Every region code of the country, when its law differs by region (see above). */
  regions?: readonly string[];
}

const US_ZONES: Record<string, string> = {
  AL: 'America/Chicago', AK: 'America/Anchorage', AZ: 'America/Phoenix', AR: 'America/Chicago',
  CA: 'America/Los_Angeles', CO: 'America/Denver', CT: 'America/New_York', DE: 'America/New_York',
  DC: 'America/New_York', FL: 'America/New_York', GA: 'America/New_York', HI: 'Pacific/Honolulu',
  ID: 'America/Boise', IL: 'America/Chicago', IN: 'America/Indiana/Indianapolis', IA: 'America/Chicago',
  KS: 'America/Chicago', KY: 'America/New_York', LA: 'America/Chicago', ME: 'America/New_York',
  MD: 'America/New_York', MA: 'America/New_York', MI: 'America/Detroit', MN: 'America/Chicago',
  MS: 'America/Chicago', MO: 'America/Chicago', MT: 'America/Denver', NE: 'America/Chicago',
  NV: 'America/Los_Angeles', NH: 'America/New_York', NJ: 'America/New_York', NM: 'America/Denver',
  NY: 'America/New_York', NC: 'America/New_York', ND: 'America/Chicago', OH: 'America/New_York',
  OK: 'America/Chicago', OR: 'America/Los_Angeles', PA: 'America/New_York', RI: 'America/New_York',
  SC: 'America/New_York', SD: 'America/Chicago', TN: 'America/Chicago', TX: 'America/Chicago',
  UT: 'America/Denver', VT: 'America/New_York', VA: 'America/New_York', WA: 'America/Los_Angeles',
  WV: 'America/New_York', WI: 'America/Chicago', WY: 'America/Denver',
  // Territories, also sent as countries of their own (below).
  PR: 'America/Puerto_Rico', GU: 'Pacific/Guam', VI: 'America/St_Thomas', AS: 'Pacific/Pago_Pago',
  MP: 'Pacific/Saipan', UM: 'Pacific/Wake',
};

const CA_ZONES: Record<string, string> = {
  AB: 'America/Edmonton', BC: 'America/Vancouver', MB: 'America/Winnipeg', NB: 'America/Moncton',
  NL: 'America/St_Johns', NS: 'America/Halifax', NT: 'America/Yellowknife', NU: 'America/Iqaluit',
  ON: 'America/Toronto', PE: 'America/Halifax', QC: 'America/Toronto', SK: 'America/Regina',
  YT: 'America/Whitehorse',
};

const AU_ZONES: Record<string, string> = {
  ACT: 'Australia/Sydney', NSW: 'Australia/Sydney', NT: 'Australia/Darwin', QLD: 'Australia/Brisbane',
  SA: 'Australia/Adelaide', TAS: 'Australia/Hobart', VIC: 'Australia/Melbourne', WA: 'Australia/Perth',
};

export const PLACES: Readonly<Record<string, Place>> = {
  US: { timeZone: 'America/New_York', zones: US_ZONES, regions: Object.keys(US_ZONES) },
  PR: { timeZone: 'America/Puerto_Rico' },
  GU: { timeZone: 'Pacific/Guam' },
  VI: { timeZone: 'America/St_Thomas' },
  AS: { timeZone: 'Pacific/Pago_Pago' },
  MP: { timeZone: 'Pacific/Saipan' },
  CA: { timeZone: 'America/Toronto', zones: CA_ZONES, regions: Object.keys(CA_ZONES) },
  AU: { timeZone: 'Australia/Sydney', zones: AU_ZONES, regions: Object.keys(AU_ZONES) },
  NZ: { timeZone: 'Pacific/Auckland', zones: { CIT: 'Pacific/Chatham' } },
  GB: { timeZone: 'Europe/London' },
  IL: { timeZone: 'Asia/Jerusalem' },
  AT: { timeZone: 'Europe/Vienna' },
  BE: { timeZone: 'Europe/Brussels' },
  BG: { timeZone: 'Europe/Sofia' },
  HR: { timeZone: 'Europe/Zagreb' },
  CY: { timeZone: 'Asia/Nicosia' },
  CZ: { timeZone: 'Europe/Prague' },
  DK: { timeZone: 'Europe/Copenhagen' },
  EE: { timeZone: 'Europe/Tallinn' },
  FI: { timeZone: 'Europe/Helsinki' },
  FR: { timeZone: 'Europe/Paris' },
  DE: { timeZone: 'Europe/Berlin' },
  GR: { timeZone: 'Europe/Athens' },
  HU: { timeZone: 'Europe/Budapest' },
  IE: { timeZone: 'Europe/Dublin' },
  IT: { timeZone: 'Europe/Rome' },
  LV: { timeZone: 'Europe/Riga' },
  LT: { timeZone: 'Europe/Vilnius' },
  LU: { timeZone: 'Europe/Luxembourg' },
  MT: { timeZone: 'Europe/Malta' },
  NL: { timeZone: 'Europe/Amsterdam' },
  PL: { timeZone: 'Europe/Warsaw' },
  // Azores (PT-20) and Madeira (PT-30).
  PT: { timeZone: 'Europe/Lisbon', zones: { '20': 'Atlantic/Azores', '30': 'Atlantic/Madeira' } },
  RO: { timeZone: 'Europe/Bucharest' },
  SK: { timeZone: 'Europe/Bratislava' },
  SI: { timeZone: 'Europe/Ljubljana' },
  // Canary Islands (ES-CN).
  ES: { timeZone: 'Europe/Madrid', zones: { CN: 'Atlantic/Canary' } },
  SE: { timeZone: 'Europe/Stockholm' },
  IS: { timeZone: 'Atlantic/Reykjavik' },
  LI: { timeZone: 'Europe/Vaduz' },
  NO: { timeZone: 'Europe/Oslo' },
};

/** The IANA time zone of a place of sale (country and region codes in upper case). */
export function timeZoneOf(country: string, region: string): string {
  const place = PLACES[country];
  return place?.zones?.[region] ?? place?.timeZone ?? 'UTC';
}

/** Whether the data knows the region: any region of a country whose law does not differ by region. */
export function isKnownRegion(country: string, region: string): boolean {
  const regions = PLACES[country]?.regions;
  return regions === undefined || regions.includes(region);
}

const formats = new Map<string, Intl.DateTimeFormat>();

/**
 * The calendar date (YYYY-MM-DD) at `instant` in a time zone. One formatter per zone is kept: the
 * zones are the few of PLACES (plus UTC), so the map stays that small.
 */
export function localDate(instant: Date, timeZone: string): string {
  let format = formats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' });
    formats.set(timeZone, format);
  }
  const parts = Object.fromEntries(format.formatToParts(instant).map((part) => [part.type, part.value]));
  return `${parts.year}-${parts.month}-${parts.day}`;
}
