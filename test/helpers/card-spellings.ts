/** Card numbers as people type them, including the spellings issue 11 found passing the old guard. */
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
] as const;
