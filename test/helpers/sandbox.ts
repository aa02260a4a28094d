/**
 * The sandbox processor's documented test cards (docs/transactions.md, "Sandbox triggers"), written
 * out here rather than taken from the code under test: [card number, response code, ISO 8583 code, text].
 */
export const ISSUER_DECLINE_CARDS: [string, number, string, string][] = [
  ['4000000000000002', 201, '05', 'DO NOT HONOR'],
  ['4000000000009995', 202, '51', 'INSUFFICIENT FUNDS'],
  ['4000000000000069', 223, '54', 'EXPIRED CARD'],
  ['4000000000000127', 225, 'N7', 'CVV2 VALUE MISMATCH'],
  ['4000000000009987', 251, '41', 'LOST CARD, PICK UP'],
  ['4000000000009979', 252, '43', 'STOLEN CARD, PICK UP'],
  ['5105100000009911', 201, '05', 'DO NOT HONOR'],
];
