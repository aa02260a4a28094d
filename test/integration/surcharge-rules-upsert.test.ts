/**
 * Corrections reach existing deployments (issue 31): the shipped rules are applied by an
 * idempotent upsert that `npm run dev`, the tests and the deploy steps run, over a database that
 * already holds rules, an older release's or the first model's, keeping the operator's own.
 */
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { lookupCard } from '../../src/services/bin-lookup/card-metadata';
import { bumpLookupDataVersion } from '../../src/services/bin-lookup/data-version';
import { isSurchargeable } from '../../src/services/bin-lookup/surcharge';
import { SHIPPED_RULES } from '../../src/services/bin-lookup/surcharge-law/shipped-rules';
import type { SurchargeRuleFields } from '../../src/storage/surcharge-rules';
import { admin } from '../helpers/api';
import { importCsv } from '../helpers/bins';
import { applySchema, applyShippedSurchargeRules } from '../helpers/schema';

const VISA_CREDIT = '411111';

beforeAll(async () => {
  await importCsv(['bin,card_brand,issuing_bank,card_type,card_level_generic,country,prepaid,commercial', `${VISA_CREDIT},visa,Credit Bank,credit,classic,US,false,false`].join('\n'));
});

/** What a deploy runs: schema.sql, then the shipped rules; then the data version every location reads. */
async function deploySteps(rules: readonly SurchargeRuleFields[] = SHIPPED_RULES): Promise<void> {
  await applySchema(env.DB, env.TEST_SCHEMA ?? '');
  await applyShippedSurchargeRules(env.DB, rules);
  // The upsert bumps the version in D1; KV's copy of it expires within 60 s in production, at once here.
  await env.BIN_CACHE.delete('bins:version');
  await bumpLookupDataVersion(env, new Date());
}

async function surchargeableAt(country: string, state: string, instant: string): Promise<boolean> {
  const card = await lookupCard(env, VISA_CREDIT, { enhanced: false });
  return isSurchargeable(env, card, { country, state }, { customerExempt: false, now: new Date(instant) });
}

const isColoradoBan = (rule: SurchargeRuleFields) =>
  rule.country === 'US' && rule.region === 'CO' && rule.effective_from === '2000-01-01' && rule.funding.includes('credit');

/** The release before the correction: Colorado "allowed at 2%" since 2000, and a rule the correction drops. */
const OLD_RELEASE: SurchargeRuleFields[] = [
  ...SHIPPED_RULES.map((rule) => (isColoradoBan(rule) ? { ...rule, surcharge: 'allowed' as const, max_rate_bps: 200, note: 'Colorado caps surcharges at 2%' } : rule)),
  { ...SHIPPED_RULES[0]!, country: 'US', region: 'WY', layer: 'law', funding: [], brands: [], surcharge: 'prohibited', note: 'a rule the next release drops' },
];

async function storedRules(where: string): Promise<Record<string, unknown>[]> {
  return (await env.DB.prepare(`SELECT origin, country, region, effective_from, surcharge, max_rate_bps, note FROM surcharge_rules_v2 WHERE ${where}`).all()).results;
}

describe('the shipped rules upsert', () => {
  it("corrects a rule in a database that holds the old one, drops the release's removed rules, and keeps the operator's", async () => {
    await deploySteps(OLD_RELEASE);
    expect(await surchargeableAt('US', 'CO', '2022-06-30T18:00:00Z')).toBe(true); // the old, wrong answer
    expect(await surchargeableAt('US', 'WY', '2026-11-25T18:00:00Z')).toBe(false);

    const put = await admin('PUT', '/admin/surcharge-rules', {
      rules: [{ country: 'US', region: 'NV', effective_from: '2020-01-01', surcharge: 'prohibited', note: "the operator's own" }],
    });
    expect(put.status).toBe(200);

    await deploySteps();
    expect(await surchargeableAt('US', 'CO', '2022-06-30T18:00:00Z')).toBe(false);
    expect(await surchargeableAt('US', 'CO', '2022-07-01T18:00:00Z')).toBe(true);
    expect(await surchargeableAt('US', 'WY', '2026-11-25T18:00:00Z')).toBe(true);
    expect(await storedRules("region = 'WY'")).toEqual([]);
    expect(await storedRules("region = 'CO' AND effective_from = '2000-01-01' AND funding = 'charge,credit'")).toMatchObject([
      { origin: 'shipped', surcharge: 'prohibited', max_rate_bps: null },
    ]);
    // The operator's rule is there, and still decides.
    expect(await storedRules("origin = 'operator'")).toMatchObject([{ country: 'US', region: 'NV', note: "the operator's own" }]);
    expect(await surchargeableAt('US', 'NV', '2026-11-25T18:00:00Z')).toBe(false);
  });

  it('changes nothing when run again: not even the data version (cached answers stay warm)', async () => {
    const version = async () => (await env.DB.prepare('SELECT version FROM bin_data_version').first<number>('version')) ?? 0;
    await applyShippedSurchargeRules(env.DB);
    const before = await version();
    const rows = await storedRules('1 = 1');
    await applySchema(env.DB, env.TEST_SCHEMA ?? '');
    await applyShippedSurchargeRules(env.DB);
    expect(await version()).toBe(before);
    expect(await storedRules('1 = 1')).toEqual(rows);
  });

  it("lets an operator's rule with a shipped rule's key take its place, and a later release keep it", async () => {
    const nz = SHIPPED_RULES.find((rule) => rule.country === 'NZ')!;
    const put = await admin('PUT', '/admin/surcharge-rules', { rules: [{ ...nz, surcharge: 'prohibited', note: 'our counsel reads the bill as law' }] });
    expect(put.status).toBe(200);
    await deploySteps(SHIPPED_RULES.map((rule) => (rule === nz ? { ...rule, note: `${rule.note} (re-checked)` } : rule)));
    expect(await surchargeableAt('NZ', 'AUK', '2026-11-25T00:00:00Z')).toBe(false);
    expect(await storedRules("country = 'NZ'")).toMatchObject([
      { origin: 'operator', surcharge: 'prohibited' },
      { origin: 'shipped', surcharge: 'allowed' },
    ]);
    await admin('PUT', '/admin/surcharge-rules', { rules: [] });
    await bumpLookupDataVersion(env, new Date());
    expect(await surchargeableAt('NZ', 'AUK', '2026-11-25T00:00:00Z')).toBe(true);
  });
});

describe("the first model's rules", () => {
  it("move over once as operator rules, without that release's own seed", async () => {
    // A deployment of the first model: its seed (Colorado wrongly allowed since 2000) plus an operator's rule.
    await env.DB.batch([
      env.DB.prepare("DELETE FROM surcharge_rules_v2 WHERE origin = 'operator'"),
      env.DB.prepare(
        `INSERT INTO surcharge_rules (country, region, effective_from, surcharge, max_rate_bps, note) VALUES
         ('US', 'CO', '2000-01-01', 'allowed', 200, 'Colorado caps surcharges at 2% or the processing cost'),
         ('US', '*', '2023-04-15', 'allowed', 300, 'Card networks allow credit surcharges in the US; Visa cap 3% since 2023-04-15'),
         ('US', 'HI', '2020-01-01', 'prohibited', NULL, 'an operator ban')`,
      ),
      env.DB.prepare('UPDATE surcharge_rules_state SET legacy_copied_at = NULL'),
    ]);
    await deploySteps();
    expect(await storedRules("origin = 'operator'")).toMatchObject([{ country: 'US', region: 'HI', surcharge: 'prohibited', note: 'an operator ban' }]);
    expect(await surchargeableAt('US', 'HI', '2026-11-25T18:00:00Z')).toBe(false);
    expect(await surchargeableAt('US', 'CO', '2022-06-30T18:00:00Z')).toBe(false);

    // Once: the operator removes the rule, and the next deploy does not bring it back.
    await admin('PUT', '/admin/surcharge-rules', { rules: [] });
    await deploySteps();
    expect(await storedRules("origin = 'operator'")).toEqual([]);
    expect(await surchargeableAt('US', 'HI', '2026-11-25T18:00:00Z')).toBe(true);
  });
});
