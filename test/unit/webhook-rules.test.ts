/** Pure rules of the webhook feature: URLs (local development), the retry schedule, signatures, stream tokens. */
import { describe, expect, it } from 'vitest';
import { mintStreamToken, verifyStreamToken } from '../../src/lib/stream-token';
import { signatureHeader } from '../../src/lib/webhook-signature';
import { checkWebhookUrl } from '../../src/lib/webhook-url';
import { internalRetryDelaySeconds } from '../../src/queues/webhook-consumer';
import {
  DEFAULT_RETRY_DELAYS_SECONDS,
  maxAttempts,
  parseRetryDelays,
  retryDelaySeconds,
  type WebhookConfig,
} from '../../src/services/webhooks/config';

const KEY = 'dGVzdC1vbmx5LWNhcmQtZGF0YS1rZXktMzItYnl0ZXM=';

describe('webhook URLs in local development (WEBHOOK_ALLOW_LOCAL=true)', () => {
  it.each(['http://localhost:8785/hook', 'http://127.0.0.1:3000/', 'https://localhost/x', 'http://[::1]:9000/h'])('%s is allowed', (url) => {
    expect(checkWebhookUrl(url, true)).toEqual({ ok: true, url: new URL(url).href });
  });

  it.each([
    ['http://10.0.0.1:8080/', 'must use https:// (http:// only for localhost and 127.0.0.1)'],
    ['http://hooks.example.test/', 'must use https:// (http:// only for localhost and 127.0.0.1)'],
    ['https://192.168.0.2/', 'must not point to a private, loopback, link-local or reserved address (192.168.0.2)'],
    ['https://127.0.0.2/', 'must not point to a private, loopback, link-local or reserved address (127.0.0.2)'],
    ['http://user:pw@localhost:1/', 'must not contain a user name or password'],
  ])('%s is still refused: %s', (url, rule) => {
    expect(checkWebhookUrl(url, true)).toEqual({ ok: false, rule });
  });

  it('the same local URLs are refused in production', () => {
    expect(checkWebhookUrl('http://localhost:8785/hook', false).ok).toBe(false);
    expect(checkWebhookUrl('http://127.0.0.1:8785/hook', false).ok).toBe(false);
  });

  it.each([
    ['https://[::ffff:93.184.216.34]/', true], // IPv4-mapped public address
    ['https://[64:ff9b::a00:1]/', false], // NAT64 of 10.0.0.1
    ['https://[2001:db8::1]/', false], // documentation
    ['https://[ff02::1]/', false], // multicast
    ['https://198.18.0.1/', false], // benchmarking
    ['https://224.0.0.1/', false], // multicast
    ['https://255.255.255.255/', false],
    ['https://8.8.8.8/', true],
    ['https://172.32.0.1/', true], // just outside 172.16.0.0/12
    ['https://a.b.example.home.arpa/', false],
    // Issue 21: a trailing dot, internal suffixes, IPv6 transition forms carrying a private IPv4.
    ['https://localhost./', false],
    ['https://LOCALHOST./', false],
    ['https://metadata.google.internal./', false],
    ['https://a.internal./', false],
    ['https://[2002:a9fe:a9fe::]/', false], // 6to4 of 169.254.169.254
    ['https://kubernetes.default.svc/', false],
    ['https://kubernetes.default.svc./', false],
    ['https://api.default.svc.cluster.local/', false],
    ['https://[2002:0a00:0001::1]/', false], // 6to4 of 10.0.0.1
    ['https://[2002:5db8:d822::1]/', true], // 6to4 of 93.184.216.34
    ['https://[2001:0:5db8:d822::ffff:ffff]/', false], // Teredo, client 0.0.0.0
    ['https://[2001:0:5db8:d822::f5ff:fffe]/', false], // Teredo, client 10.0.0.1 (inverted)
    ['https://[2001:0:5db8:d822::5647:96fe]/', true], // Teredo, both addresses public
    ['https://[2001:0:a9fe:a9fe::a247:2bcb]/', false], // Teredo via server 169.254.169.254
    ['https://[64:ff9b:1::a9fe:a9fe]/', false], // NAT64 local-use prefix of 169.254.169.254
    ['https://hooks.example.com./', true],
  ])('%s public: %s', (url, ok) => {
    expect(checkWebhookUrl(url, false).ok).toBe(ok);
  });
});

describe('retry schedule', () => {
  const config: WebhookConfig = { retryDelaysSeconds: DEFAULT_RETRY_DELAYS_SECONDS, allowLocal: false, timeoutMs: 10_000 };

  it('production: 8 attempts over about 22 hours, no single wait past the 12-hour queue delay', () => {
    expect(maxAttempts(config)).toBe(8);
    const total = DEFAULT_RETRY_DELAYS_SECONDS.reduce((sum, delay) => sum + delay, 0);
    expect(total / 3600).toBeGreaterThan(20);
    expect(total / 3600).toBeLessThan(24);
    expect(Math.max(...DEFAULT_RETRY_DELAYS_SECONDS)).toBeLessThanOrEqual(43_200);
    // Exponential-ish: each wait longer than the one before.
    expect([...DEFAULT_RETRY_DELAYS_SECONDS].sort((a, b) => a - b)).toEqual(DEFAULT_RETRY_DELAYS_SECONDS);
  });

  it('waits delay n after failed attempt n, with ±20 % jitter, and none after the last', () => {
    expect(retryDelaySeconds(config, 1, () => 0.5)).toBe(30);
    expect(retryDelaySeconds(config, 1, () => 0)).toBe(24);
    expect(retryDelaySeconds(config, 1, () => 0.99999)).toBe(36);
    expect(retryDelaySeconds(config, 7, () => 0.5)).toBe(43_200);
    expect(retryDelaySeconds(config, 8, () => 0.5)).toBeNull();
  });

  it('reads WEBHOOK_RETRY_DELAYS; a malformed value falls back to the documented schedule', () => {
    expect(parseRetryDelays('5, 10,20')).toEqual([5, 10, 20]);
    expect(parseRetryDelays('0,0,0')).toEqual([0, 0, 0]);
    expect(parseRetryDelays(undefined)).toEqual(DEFAULT_RETRY_DELAYS_SECONDS);
    const quiet = console.error;
    console.error = () => undefined;
    try {
      expect(parseRetryDelays('5,ten')).toEqual(DEFAULT_RETRY_DELAYS_SECONDS);
      expect(parseRetryDelays('-1')).toEqual(DEFAULT_RETRY_DELAYS_SECONDS);
    } finally {
      console.error = quiet;
    }
  });

  it("the queue's own retries (this Worker's errors) back off from 10 s to at most 10 minutes", () => {
    expect([1, 2, 3, 4, 7, 20].map(internalRetryDelaySeconds)).toEqual([10, 20, 40, 80, 600, 600]);
  });
});

describe('signature header', () => {
  it('is t=<seconds> then one v1=<hex HMAC-SHA256(secret, "t.body")> per secret, in order', async () => {
    const header = await signatureHeader(['whsec_a', 'whsec_b'], 1_767_225_600, '{"x":1}');
    const [t, first, second] = header.split(',');
    expect(t).toBe('t=1767225600');
    expect(first).toMatch(/^v1=[0-9a-f]{64}$/);
    expect(second).toMatch(/^v1=[0-9a-f]{64}$/);
    expect(first).not.toBe(second);
    // The second is the HMAC of the second secret, computed here from the definition.
    const key = await crypto.subtle.importKey('raw', new TextEncoder().encode('whsec_b'), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode('1767225600.{"x":1}')));
    expect(second).toBe(`v1=${[...mac].map((b) => b.toString(16).padStart(2, '0')).join('')}`);
  });
});

describe('stream tokens', () => {
  it('open only the batch and merchant they were minted for, while the minting key is active, until they expire', async () => {
    const active = ['key_a', 'key_b'];
    const token = await mintStreamToken(KEY, 'm1', 'bat_1', 1_000, 'key_b');
    expect(token).toMatch(/^bst_1000_[A-Za-z0-9_-]{43}$/);
    expect(await verifyStreamToken(KEY, token, 'm1', 'bat_1', 999, active)).toBe(true);
    expect(await verifyStreamToken(KEY, token, 'm1', 'bat_1', 1_000, active)).toBe(false);
    expect(await verifyStreamToken(KEY, token, 'm1', 'bat_2', 999, active)).toBe(false);
    expect(await verifyStreamToken(KEY, token, 'm2', 'bat_1', 999, active)).toBe(false);
    // The key that minted it revoked: no longer among the active ones.
    expect(await verifyStreamToken(KEY, token, 'm1', 'bat_1', 999, ['key_a'])).toBe(false);
    expect(await verifyStreamToken(KEY, token, 'm1', 'bat_1', 999, [])).toBe(false);
    // A longer life written into the token breaks its signature.
    expect(await verifyStreamToken(KEY, token.replace('bst_1000_', 'bst_9000_'), 'm1', 'bat_1', 999, active)).toBe(false);
    const otherKey = btoa(String.fromCharCode(...new Uint8Array(32).fill(7)));
    expect(await verifyStreamToken(otherKey, token, 'm1', 'bat_1', 999, active)).toBe(false);
    for (const junk of ['', 'bst_', 'bst_1000_', `bst_1000_${'A'.repeat(43)}`, 'api_demoSecretKey0000000000000000000']) {
      expect(await verifyStreamToken(KEY, junk, 'm1', 'bat_1', 999, active)).toBe(false);
    }
  });
});
