/** Luhn (mod 10) check of a digit string, as card numbers carry. */
export function passesLuhn(digits: string): boolean {
  if (!/^[0-9]+$/.test(digits)) return false;
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let digit = digits.charCodeAt(i) - 48;
    if (double) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
    double = !double;
  }
  return sum % 10 === 0;
}

/** A card number as accepted anywhere in the service: 12 to 19 ASCII digits passing Luhn. */
export function isValidCardNumber(value: string): boolean {
  return value.length >= 12 && value.length <= 19 && passesLuhn(value);
}

/**
 * Whether free text holds something that reads as a card number: a run of 12-19 digits (single
 * spaces or dashes between digits allowed, as people type them) passing Luhn. Fields that are
 * stored or echoed in plain text (ids, descriptions, references) refuse such values, so a card
 * number pasted into the wrong field never lands outside encrypted storage.
 */
export function containsCardNumber(text: string): boolean {
  for (const run of text.match(/\d(?:[ -]?\d)*/g) ?? []) {
    const digits = run.replace(/[ -]/g, '');
    if (isValidCardNumber(digits)) return true;
  }
  return false;
}
