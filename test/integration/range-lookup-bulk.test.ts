/**
 * The enhanced lookup of a batch chunk: every card's account ranges in one D1 statement. Each card
 * must get the narrowest range of its own 11-digit block, however many blocks share a BIN, ranges
 * nest or cards repeat, exactly as the one-card lookup answers it.
 */
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { lookupCard, lookupCards } from '../../src/services/bin-lookup/card-metadata';
import { findRangesOverlapping, findRangesOverlappingMany } from '../../src/storage/bins';
import { importCsv } from '../helpers/bins';

/** A 16-digit number starting with `prefix` that passes Luhn. */
function cardNumber(prefix: string): string {
  const body = prefix.padEnd(15, '0');
  for (let check = 0; check < 10; check++) {
    const number = body + check;
    let sum = 0;
    for (let i = 0; i < 16; i++) {
      let digit = Number(number[15 - i]);
      if (i % 2 === 1) digit = digit * 2 > 9 ? digit * 2 - 9 : digit * 2;
      sum += digit;
    }
    if (sum % 10 === 0) return number;
  }
  throw new Error('unreachable');
}

beforeAll(async () => {
  const bins = await importCsv(
    ['bin,card_brand,issuing_bank,card_type,country', '453201,visa,Base Bank,credit,US', '532013,mastercard,Other Base,debit,GB'].join('\n'),
  );
  expect(bins.imported).toBe(2);
  const ranges = await importCsv(
    [
      'low,high,issuing_bank,card_level_generic,country',
      // Nested ranges in one BIN: the narrowest holding the card wins.
      '4532010000,4532019999,Wide Range Bank,classic,US',
      '4532015000,4532015999,Narrow Range Bank,platinum,CA',
      '45320155,45320155,Narrowest Range Bank,signature,MX',
      // Another BIN, two side-by-side ranges.
      '5320130000,5320134999,Low Half Bank,business,GB',
      '5320135000,5320139999,High Half Bank,corporate,IE',
    ].join('\n'),
    '/admin/bins/ranges/import',
  );
  expect(ranges.imported).toBe(5);
});

describe('account ranges of a chunk in one statement', () => {
  const cards = [
    cardNumber('4532015512'), // narrowest (45320155)
    cardNumber('4532015012'), // narrow
    cardNumber('4532011000'), // wide only
    cardNumber('5320131234'), // low half
    cardNumber('5320137777'), // high half
    cardNumber('4532015512'), // the first card again
    cardNumber('4111111111'), // no range, no BIN
    cardNumber('5320139999'), // high half, last block
  ];

  it('answers each card what the one-card lookup answers, in order', async () => {
    const single = await Promise.all(cards.map((number) => lookupCard(env, number, { enhanced: true })));
    const bulk = await lookupCards(env, cards, { enhanced: true });
    expect(bulk).toEqual(single);
    expect(bulk.map((card) => card.issuing_bank)).toEqual([
      'Narrowest Range Bank',
      'Narrow Range Bank',
      'Wide Range Bank',
      'Low Half Bank',
      'High Half Bank',
      'Narrowest Range Bank',
      undefined,
      'High Half Bank',
    ]);
  });

  it('groups the overlapping ranges by block, each ordered by its low bound', async () => {
    const blocks = ['45320155120', '53201312340', '41111111110', '45320110000'].map((key) => ({
      bin6: key.slice(0, 6),
      low: key.padEnd(19, '0'),
      high: key.padEnd(19, '9'),
    }));
    const one = await Promise.all(blocks.map((b) => findRangesOverlapping(env.DB, b.bin6, b.low, b.high)));
    const many = await findRangesOverlappingMany(env.DB, blocks);
    expect(many).toEqual(one);
    expect(many.map((ranges) => ranges.length)).toEqual([3, 1, 0, 1]);
    expect(await findRangesOverlappingMany(env.DB, [])).toEqual([]);
  });
});
