/**
 * Which URLs a webhook may be sent to. The service makes requests to them on a merchant's behalf,
 * so an address inside a network (a cloud metadata endpoint, a database port, the loopback) must
 * never be one: https on the default port to a public host only. Local development
 * (`WEBHOOK_ALLOW_LOCAL=true`, set by `npm run dev`) also allows http(s)://localhost and
 * http(s)://127.0.0.1 on any port, so a receiver on the developer's machine can be tried.
 *
 * Host names are checked by name; the Workers runtime resolves them and, on Cloudflare, a public
 * name resolving to a private address cannot reach a private network either.
 */

export const MAX_WEBHOOK_URL_LENGTH = 2048;

export type UrlVerdict = { ok: true; url: string } | { ok: false; rule: string };

const LOCAL_HOSTS: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]']);
/**
 * Names that only ever resolve inside a network (RFC 6761, RFC 6762, RFC 8375, common practice:
 * Kubernetes services `*.svc` and `*.svc.cluster.local`, Consul, router defaults).
 */
const INTERNAL_SUFFIXES = [
  '.localhost',
  '.local',
  '.internal',
  '.intranet',
  '.lan',
  '.home.arpa',
  '.home',
  '.corp',
  '.private',
  '.localdomain',
  '.svc',
  '.cluster',
  '.consul',
  '.invalid',
];

export function checkWebhookUrl(input: string, allowLocal: boolean): UrlVerdict {
  if (input.length > MAX_WEBHOOK_URL_LENGTH) return { ok: false, rule: `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters` };
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return { ok: false, rule: 'must be an absolute URL such as https://example.com/webhooks' };
  }
  if (url.username !== '' || url.password !== '') return { ok: false, rule: 'must not contain a user name or password' };
  // `localhost.` and `a.internal.` are the same names as without the final dot (fully qualified):
  // the rules read them without it.
  const host = url.hostname.toLowerCase().replace(/\.+$/, '');
  if (allowLocal && LOCAL_HOSTS.has(host) && (url.protocol === 'http:' || url.protocol === 'https:')) return { ok: true, url: url.href };
  if (url.protocol !== 'https:') {
    return {
      ok: false,
      rule: allowLocal
        ? 'must use https:// (http:// only for localhost and 127.0.0.1)'
        : 'must use https:// (http://localhost is allowed only in local development, WEBHOOK_ALLOW_LOCAL=true)',
    };
  }
  // The URL parser drops the scheme's default port: any port left is another one.
  if (url.port !== '') return { ok: false, rule: 'must use the default https port (443)' };
  const refusal = hostRefusal(host);
  if (refusal) return { ok: false, rule: refusal };
  return { ok: true, url: url.href };
}

function hostRefusal(host: string): string | null {
  // The parser has already turned decimal, octal and hex IPv4 spellings into dotted form.
  const v4 = parseIpv4(host);
  if (v4) return isPublicIpv4(v4) ? null : `must not point to a private, loopback, link-local or reserved address (${host})`;
  if (host.startsWith('[')) {
    const v6 = parseIpv6(host.slice(1, -1));
    if (!v6 || !isPublicIpv6(v6)) return `must not point to a private, loopback, link-local or reserved address (${host})`;
    return null;
  }
  if (host === 'localhost' || INTERNAL_SUFFIXES.some((suffix) => host.endsWith(suffix))) {
    return `must be a public host name (${host} is local)`;
  }
  if (!host.includes('.')) return `must be a public host name with a domain (${host} has none)`;
  return null;
}

function parseIpv4(host: string): number[] | null {
  const parts = host.split('.');
  if (parts.length !== 4 || !parts.every((part) => /^[0-9]{1,3}$/.test(part))) return null;
  const octets = parts.map(Number);
  return octets.every((octet) => octet <= 255) ? octets : null;
}

/** Ranges of IANA's special-purpose registry that are not globally reachable. */
function isPublicIpv4([a = 0, b = 0, c = 0]: number[]): boolean {
  if (a === 0 || a === 10 || a === 127) return false; // "this network", private, loopback
  if (a === 100 && b >= 64 && b <= 127) return false; // carrier-grade NAT
  if (a === 169 && b === 254) return false; // link-local (cloud metadata lives here)
  if (a === 172 && b >= 16 && b <= 31) return false;
  if (a === 192 && b === 168) return false;
  if (a === 192 && b === 0 && (c === 0 || c === 2)) return false; // IETF protocol assignments, TEST-NET-1
  if (a === 198 && (b === 18 || b === 19)) return false; // benchmarking
  if (a === 198 && b === 51 && c === 100) return false; // TEST-NET-2
  if (a === 203 && b === 0 && c === 113) return false; // TEST-NET-3
  if (a >= 224) return false; // multicast, reserved, broadcast
  return true;
}

/** Eight 16-bit groups, or null when the text is not an IPv6 address. */
function parseIpv6(text: string): number[] | null {
  let source = text;
  // A trailing dotted IPv4 (::ffff:1.2.3.4) becomes two groups.
  const dotted = /:(\d+\.\d+\.\d+\.\d+)$/.exec(source);
  if (dotted?.[1]) {
    const v4 = parseIpv4(dotted[1]);
    if (!v4) return null;
    const [a = 0, b = 0, c = 0, d = 0] = v4;
    source = `${source.slice(0, dotted.index)}:${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = source.split('::');
  if (halves.length > 2) return null;
  const groups = (part: string | undefined) => (part ? part.split(':') : []);
  const head = groups(halves[0]);
  const tail = groups(halves[1]);
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail];
  if (!all.every((group) => /^[0-9a-f]{1,4}$/i.test(group))) return null;
  return all.map((group) => parseInt(group, 16));
}

function isPublicIpv6(groups: number[]): boolean {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = groups;
  const embeddedV4 = [g6 >> 8, g6 & 0xff, g7 >> 8, g7 & 0xff];
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0) {
    if (g5 === 0xffff) return isPublicIpv4(embeddedV4); // IPv4-mapped
    return false; // unspecified, loopback, deprecated IPv4-compatible
  }
  // Transition forms carry an IPv4 address, which is what the packet reaches: its rules apply.
  if (g0 === 0x64 && g1 === 0xff9b && (g2 === 0 || g2 === 1)) return isPublicIpv4(embeddedV4); // NAT64, well-known and local-use prefixes
  if (g0 === 0x2002) return isPublicIpv4([g1 >> 8, g1 & 0xff, g2 >> 8, g2 & 0xff]); // 6to4: 2002:AABB:CCDD::/48
  if (g0 === 0x2001 && g1 === 0) {
    // Teredo: the server's address in the clear, the client's inverted in the last 32 bits.
    const client = [(~g6 >> 8) & 0xff, ~g6 & 0xff, (~g7 >> 8) & 0xff, ~g7 & 0xff];
    return isPublicIpv4([g2 >> 8, g2 & 0xff, g3 >> 8, g3 & 0xff]) && isPublicIpv4(client);
  }
  if ((g0 & 0xfe00) === 0xfc00) return false; // unique local
  if ((g0 & 0xffc0) === 0xfe80) return false; // link-local
  if ((g0 & 0xff00) === 0xff00) return false; // multicast
  if (g0 === 0x2001 && g1 === 0x0db8) return false; // documentation
  if (g0 === 0x0100 && g1 === 0 && g2 === 0 && g3 === 0) return false; // discard-only
  return true;
}
