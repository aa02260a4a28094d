/**
 * ABA routing number check: 9 digits whose weighted sum (3, 7, 1 repeating) is a multiple of 10.
 * https://en.wikipedia.org/wiki/ABA_routing_transit_number#Check_digit
 */
export function isValidRoutingNumber(value: string): boolean {
  if (!/^[0-9]{9}$/.test(value)) return false;
  const weights = [3, 7, 1, 3, 7, 1, 3, 7, 1];
  let sum = 0;
  for (let i = 0; i < 9; i++) sum += (value.charCodeAt(i) - 48) * (weights[i] ?? 0);
  return sum % 10 === 0;
}
