// Types of card-checks.js for the TypeScript tests that hold it to the service's own checks.
export interface FieldCheck {
  empty: boolean;
  complete: boolean;
  error: string | null;
  definite: boolean;
}
export const IIN_RANGES: readonly (readonly [string, string, string])[];
export function passesLuhn(digits: string): boolean;
export function detectBrand(digits: string): string | undefined;
export function brandLabel(brand: string | undefined): string;
export function numberLengths(brand: string | undefined): number[];
export function cvcLengths(brand: string | undefined): number[];
export function digitsOf(text: string): string;
export function formatNumber(digits: string): string;
export function formatExpiration(text: string, deleting?: boolean): string;
export function parseExpiry(value: string): { month: number; year: number } | null;
export function isExpired(expiry: { month: number; year: number }, now: Date): boolean;
export function checkNumber(digits: string): FieldCheck & { brand: string | undefined };
export function checkExpiration(text: string, now: Date): FieldCheck & { month: number; year: number };
export function checkCvc(digits: string, brand: string | undefined): FieldCheck;
