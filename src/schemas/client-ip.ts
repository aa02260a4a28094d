import { z } from 'zod';

/**
 * The caller's address as Cloudflare gives it (CF-Connecting-IP), recorded as the transaction's
 * `ip_address`: an IPv4 or IPv6 address, or nothing. Cloudflare sets the header itself in
 * production; anything else (a local run, a proxy in front) is refused rather than stored and
 * written into result files.
 */
export const clientIpField = z
  .union([z.literal('').transform(() => undefined), z.ipv4(), z.ipv6()], 'must be an IPv4 or IPv6 address')
  .optional();

export const clientIpHeaderSchema = z.object({ 'cf-connecting-ip': clientIpField });
