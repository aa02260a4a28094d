/**
 * Local dates come from workerd's Intl time zone data: checked here, not assumed (a runtime built
 * without it would answer every place in UTC, or throw).
 */
import { describe, expect, it } from 'vitest';
import { isKnownRegion, localDate, PLACES, timeZoneOf } from '../../src/services/bin-lookup/surcharge-law/places';

describe('Intl time zones in workerd', () => {
  it('knows every zone the places name', () => {
    const zones = new Set(Object.values(PLACES).flatMap((place) => [place.timeZone, ...Object.values(place.zones ?? {})]));
    expect(zones.size).toBeGreaterThan(40);
    for (const zone of zones) {
      // An unknown zone throws a RangeError; a known one resolves to itself or its canonical name.
      expect(() => new Intl.DateTimeFormat('en-US', { timeZone: zone }), zone).not.toThrow();
    }
    expect(() => new Intl.DateTimeFormat('en-US', { timeZone: 'Mars/Olympus_Mons' })).toThrow(RangeError);
  });

  it("turns 1 October 2026 at each Australian state's midnight", () => {
    expect(localDate(new Date('2026-09-30T13:59:00Z'), timeZoneOf('AU', 'NSW'))).toBe('2026-09-30');
    expect(localDate(new Date('2026-09-30T14:00:00Z'), timeZoneOf('AU', 'NSW'))).toBe('2026-10-01');
    expect(localDate(new Date('2026-09-30T14:29:00Z'), timeZoneOf('AU', 'SA'))).toBe('2026-09-30'); // UTC+9:30
    expect(localDate(new Date('2026-09-30T15:59:00Z'), timeZoneOf('AU', 'WA'))).toBe('2026-09-30');
    expect(localDate(new Date('2026-09-30T16:00:00Z'), timeZoneOf('AU', 'WA'))).toBe('2026-10-01');
  });

  it('follows daylight saving time (Denver: UTC-6 in summer, UTC-7 in winter)', () => {
    expect(localDate(new Date('2022-07-01T05:59:00Z'), timeZoneOf('US', 'CO'))).toBe('2022-06-30');
    expect(localDate(new Date('2022-07-01T06:00:00Z'), timeZoneOf('US', 'CO'))).toBe('2022-07-01');
    expect(localDate(new Date('2022-01-01T06:59:00Z'), timeZoneOf('US', 'CO'))).toBe('2021-12-31');
  });

  it('answers an unlisted country in UTC, and a region without its own zone in its country’s', () => {
    expect(timeZoneOf('ZZ', 'X')).toBe('UTC');
    expect(timeZoneOf('DE', 'BY')).toBe('Europe/Berlin');
    expect(timeZoneOf('ES', 'CN')).toBe('Atlantic/Canary');
  });
});

describe('known regions', () => {
  it('are every region of the countries whose law differs by region, and any region elsewhere', () => {
    expect(isKnownRegion('US', 'CO')).toBe(true);
    expect(isKnownRegion('US', 'GU')).toBe(true);
    expect(isKnownRegion('US', 'ZZ')).toBe(false);
    expect(isKnownRegion('AU', 'NSW')).toBe(true);
    expect(isKnownRegion('AU', 'XYZ')).toBe(false);
    expect(isKnownRegion('DE', 'BY')).toBe(true);
    expect(isKnownRegion('NZ', 'AUK')).toBe(true);
  });
});
