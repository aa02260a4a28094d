/**
 * Card numbers as people type them (26 spellings): the ones issue 11 found passing the first guard,
 * and the 13 issue 21 found passing the second (separators of every kind and run length, digits of
 * other scripts, invisible characters, a digit glued in front).
 */
const zeroWidth = (digits: string) => [...digits].join('\u200b');

export const CARD_SPELLINGS = [
  '4111111111111111',
  '4111 1111 1111 1111',
  '4111-1111-1111-1111',
  '4111.1111.1111.1111',
  '12 4111111111111111',
  '1-5555555555554444',
  '3782-822463-10005',
  '6011 0009 9013 9424',
  '4000-0566-5566-5556',
  '4111\u202f1111\u202f1111\u202f1111',
  '5555 5555 5555 4444',
  '6011-0009-9013-9424',
  '3782 822463 10005',
  // Issue 21's spellings:
  '4111  1111  1111  1111',
  '4111/1111/1111/1111',
  '4111_1111_1111_1111',
  '4111,1111,1111,1111',
  '4111:1111:1111:1111',
  '4111+1111+1111+1111',
  '4111 - 1111 - 1111 - 1111',
  '4111\u00a01111\u00a01111\u00a01111',
  '4111\u20131111\u20131111\u20131111',
  zeroWidth('5555555555554444'),
  '\uff14\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11',
  '\u0664\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661',
  '14111111111111111',
] as const;

/** The card numbers CARD_SPELLINGS spell, digits only: what a leak scan looks for. */
export const SPELLED_CARD_NUMBERS = ['4111111111111111', '5555555555554444', '378282246310005', '6011000990139424', '4000056655665556'] as const;
