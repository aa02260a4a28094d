/**
 * Web origins as a merchant lists them for the hosted tokenizer. A listed origin is compared as a
 * string with what browsers report (MessageEvent.origin, the Origin header) and is written into a
 * Content-Security-Policy header, so only the exact serialisation a browser produces is accepted:
 * nothing is normalised behind the merchant's back, and nothing can smuggle a CSP delimiter.
 */
import { quoteInput } from './quote';

export const MAX_ORIGIN_LENGTH = 255;

/** Hosts served over plain http that may still be listed: a developer's own machine. */
const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1']);

/** Dot-separated labels of letters, digits and inner hyphens (IDNs arrive here as punycode). */
const PLAIN_HOST = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * What is wrong with `value` as a listed origin, phrased to follow the quoted value
 * (`"http://shop.example" must use https…`), or null when it is one.
 */
export function originProblem(value: string): string | null {
  if (value.length > MAX_ORIGIN_LENGTH) return `is longer than ${MAX_ORIGIN_LENGTH} characters`;
  if (value.includes('*')) return 'has a wildcard: list each origin on its own';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not an origin: write it as scheme://host[:port], like "https://shop.example"';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must use https';
  if (url.protocol === 'http:' && !LOCAL_HOSTS.has(url.hostname)) {
    return 'must use https (plain http is allowed only for localhost and 127.0.0.1)';
  }
  if (url.username !== '' || url.password !== '') return 'must not hold a user name or password';
  if (!PLAIN_HOST.test(url.hostname)) return 'has a host that is not a domain name or an IPv4 address';
  if (url.origin !== value) {
    return `is not an origin (scheme://host[:port], lower case, nothing after it): write it as ${quoteInput(url.origin, MAX_ORIGIN_LENGTH)}`;
  }
  return null;
}
