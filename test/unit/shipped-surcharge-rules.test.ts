/** The shipped surcharge rules as data: each sourced, well-formed, and applicable within D1's limits. */
import { describe, expect, it } from 'vitest';
import { surchargeRulesSchema } from '../../src/schemas/lookup';
import { EEA, eeaMembers } from '../../src/services/bin-lookup/surcharge-law/economic-areas';
import { isKnownRegion, PLACES } from '../../src/services/bin-lookup/surcharge-law/places';
import { SHIPPED_RULES } from '../../src/services/bin-lookup/surcharge-law/shipped-rules';
import { D1 } from '../../src/lib/platform-limits';
import { MAX_SHIPPED_RULES, RULE_SET_MAX_BYTES, RULE_SET_MEMORY_BUDGET, shippedRelease, shippedRulesSql, storedList } from '../../src/storage/surcharge-rules-sql';

describe('the shipped surcharge rules', () => {
  it('each name a source (a URL) in a note an operator could also PUT', () => {
    for (const rule of SHIPPED_RULES) {
      expect(rule.note, `${rule.country}/${rule.region}`).toMatch(/https?:\/\//);
    }
    // The operator's schema accepts every shipped rule as it is (note length, codes, conditions).
    const parsed = surchargeRulesSchema.safeParse({ rules: SHIPPED_RULES.slice(0, 1000) });
    expect(parsed.error?.issues ?? []).toEqual([]);
  });

  it('hold each key once (the upsert could not apply two rules with one key) and stay under the bound', () => {
    const keys = SHIPPED_RULES.map((rule) =>
      [rule.layer, rule.country, rule.region, rule.effective_from, storedList(rule.brands), storedList(rule.except_brands), storedList(rule.funding), rule.card_class ?? '', storedList(rule.issuer_region)].join('/'),
    );
    expect(new Set(keys).size).toBe(keys.length);
    expect(SHIPPED_RULES.length).toBeLessThanOrEqual(MAX_SHIPPED_RULES);
    // Every isolate holds the whole set: its largest stays inside a tenth of HALF the isolate's memory,
    // and a shipped rule is well under the 2 KB of text each rule is budgeted.
    expect(RULE_SET_MAX_BYTES).toBeLessThanOrEqual(RULE_SET_MEMORY_BUDGET);
    expect(Math.max(...SHIPPED_RULES.map((rule) => JSON.stringify(rule).length))).toBeLessThan(2_000);
  });

  it('name only places the data knows, each with a time zone', () => {
    for (const rule of SHIPPED_RULES) {
      expect(PLACES[rule.country], rule.country).toBeDefined();
      if (rule.region !== '*') expect(isKnownRegion(rule.country, rule.region), `${rule.country}/${rule.region}`).toBe(true);
    }
  });

  it('cover every EEA member, twice (at cost; the consumer ban), and Italy a third time', () => {
    const members = eeaMembers('2026-11-25');
    expect(members).toHaveLength(30);
    expect(members).not.toContain('GB');
    for (const country of members) {
      expect(SHIPPED_RULES.filter((rule) => rule.country === country)).toHaveLength(country === 'IT' ? 3 : 2);
    }
    expect(Object.keys(EEA)).toContain('GB'); // a member until 2020-12-31
  });

  it('apply as SQL statements under half of D1’s statement limit, the upserts split in chunks', async () => {
    const statements = await shippedRulesSql(SHIPPED_RULES);
    const bytes = statements.map((statement) => new TextEncoder().encode(statement).length);
    expect(Math.max(...bytes)).toBeLessThanOrEqual(D1.statementBytes / 2);
    expect(statements.filter((statement) => statement.startsWith('INSERT')).length).toBeGreaterThan(1);
    expect(statements.every((statement) => statement.endsWith(';'))).toBe(true);
  });

  it('have a release id that changes with any rule and nothing else', async () => {
    const release = await shippedRelease(SHIPPED_RULES);
    expect(release).toMatch(/^[0-9a-f]{16}$/);
    expect(await shippedRelease([...SHIPPED_RULES])).toBe(release);
    const corrected = SHIPPED_RULES.map((rule, i) => (i === 0 ? { ...rule, note: `${rule.note} (corrected)` } : rule));
    expect(await shippedRelease(corrected)).not.toBe(release);
  });
});
