/**
 * Console sessions in KV `TOKENS`: `console:{sha256 of the session id}` → the session, expiring
 * with it. Only the hash is a key, so a KV listing or dump gives nobody a usable cookie.
 */
export interface StoredConsoleSession {
  /** sha256 of the API key the session was opened with: each request re-checks that it still works. */
  keyHash: string;
  /**
   * The CSRF token the page sends in X-CSRF-Token. Kept as is (the page asks for it again after a
   * reload); on its own it opens nothing: every request also needs the session cookie.
   */
  csrfToken: string;
  expiresAt: string;
}

const key = (sessionHash: string) => `console:${sessionHash}`;

export async function putConsoleSession(kv: KVNamespace, sessionHash: string, session: StoredConsoleSession, ttlSeconds: number): Promise<void> {
  await kv.put(key(sessionHash), JSON.stringify(session), { expirationTtl: ttlSeconds });
}

export async function getConsoleSession(kv: KVNamespace, sessionHash: string): Promise<StoredConsoleSession | null> {
  return kv.get<StoredConsoleSession>(key(sessionHash), 'json');
}

export async function deleteConsoleSession(kv: KVNamespace, sessionHash: string): Promise<void> {
  await kv.delete(key(sessionHash));
}
