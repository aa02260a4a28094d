/**
 * KV access for temp tokens in the TOKENS namespace. The KV key is a hash of the token, so a
 * listing of the namespace hands out nothing a caller could present; the value is an opaque
 * sealed blob (see services/tokens.ts).
 */
import { sha256Hex } from '../lib/crypto';

const PREFIX = 'tok:';

async function keyOf(token: string): Promise<string> {
  return PREFIX + (await sha256Hex(token));
}

export async function putTempToken(kv: KVNamespace, token: string, sealed: string, ttlSeconds: number): Promise<void> {
  await kv.put(await keyOf(token), sealed, { expirationTtl: ttlSeconds });
}

export async function getTempToken(kv: KVNamespace, token: string): Promise<string | null> {
  return kv.get(await keyOf(token), 'text');
}
