import { containsCardNumber } from './card-number';

/** A client's value as an error message may quote it: JSON-escaped, bounded, and never a card number. */
export function quoteInput(value: string, maxLength = 80): string {
  if (containsCardNumber(value)) return '(a card number)';
  return JSON.stringify(value.length > maxLength ? `${value.slice(0, maxLength)}…` : value);
}
