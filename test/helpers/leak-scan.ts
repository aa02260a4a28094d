/**
 * Scanners for card data in everything the service stores or says: D1 tables, KV namespaces, R2
 * objects, Durable Object storage, queue messages, response bodies and console output.
 *
 * A finding is a full card number (also when written with separators of any kind or in digits of
 * another script, and also inside a base64 run, so a value merely encoded rather than encrypted is
 * caught) or a CVC standing alone
 * (not part of a longer run of letters or digits: ids, hashes and ciphertext are not findings).
 * Sealed values (card-crypto's "v1.<iv>.<ciphertext>") decode to ciphertext and so pass.
 */
import { listDurableObjectIds, runInDurableObject } from 'cloudflare:test';
import { vi } from 'vitest';
import { objectRowsAsText, storedText } from './ledger';

export interface Secrets {
  /** Full card numbers, digits only. */
  cardNumbers: readonly string[];
  /** CVCs: choose values unlikely to occur by chance (not 000, not a year). */
  cvcs: readonly string[];
}

export interface Finding {
  /** Where it was found: "D1 batches row 3", "KV TOKENS tok:…", "console.error", ... */
  where: string;
  kind: 'card number' | 'cvc';
  /** The text around the finding, with the secret replaced by its kind, to say where it sits. */
  context: string;
}

const BASE64_RUN = /[A-Za-z0-9+/_-]{16,}={0,2}/g;

/** Every place in `text` (and in text decoded from base64 runs in it) where a secret appears. */
export function findSecrets(text: string, secrets: Secrets, where: string): Finding[] {
  const findings = scanPlain(text, secrets, where);
  for (const run of text.match(BASE64_RUN) ?? []) {
    const decoded = decodeBase64(run);
    if (decoded !== null) findings.push(...scanPlain(decoded, secrets, `${where} (base64-decoded)`));
  }
  return findings;
}

/** The first digit (0) of each script the tests spell card numbers in, besides ASCII and fullwidth (NFKC's). */
const OTHER_ZEROS = [0x0660, 0x06f0, 0x0966, 0x1d7ce];

/**
 * `text` with digits of other scripts as ASCII and every separator between digits dropped, written
 * here independently of the detector under test: NFKC for fullwidth forms, a table of zeros for the rest.
 */
export function compactDigits(text: string): string {
  let ascii = '';
  for (const ch of text.normalize('NFKC')) {
    const code = ch.codePointAt(0) as number;
    const zero = OTHER_ZEROS.find((first) => code >= first && code < first + 10);
    ascii += zero === undefined ? ch : String(code - zero);
  }
  return ascii.replace(/(?<=\d)[\s\p{Pd}\p{Cf}._/,:+]+(?=\d)/gu, '');
}

const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;

function scanPlain(text: string, secrets: Secrets, where: string): Finding[] {
  const findings: Finding[] = [];
  // Digits written with any separators between them count as one number, in any script.
  const compact = compactDigits(text);
  for (const number of secrets.cardNumbers) {
    const at = compact.indexOf(number);
    if (at >= 0) findings.push({ where, kind: 'card number', context: around(compact, at, number.length, 'card number') });
  }
  // A UUID (request ids, X-Request-Id) is random hex in dash-separated groups: a 4-digit CVC turns
  // up as a whole group about once in 65,536 ids. Its groups are an id, not a CVC standing alone.
  const withoutUuids = text.replace(UUID, (uuid) => uuid.replace(/[0-9a-f]/gi, 'x'));
  for (const cvc of secrets.cvcs) {
    const pattern = new RegExp(`(?<![A-Za-z0-9])${cvc}(?![A-Za-z0-9])`);
    const match = pattern.exec(withoutUuids);
    if (match) findings.push({ where, kind: 'cvc', context: around(text, match.index, cvc.length, 'cvc') });
  }
  return findings;
}

function around(text: string, at: number, length: number, kind: string): string {
  return `${text.slice(Math.max(0, at - 40), at)}<${kind}>${text.slice(at + length, at + length + 40)}`;
}

function decodeBase64(run: string): string | null {
  try {
    const standard = run.replace(/-/g, '+').replace(/_/g, '/').replace(/=+$/, '');
    const padded = standard + '='.repeat((4 - (standard.length % 4)) % 4);
    return atob(padded);
  } catch {
    return null;
  }
}

/** Every row of every table in the D1 database (tables listed from sqlite_master). */
export async function scanD1(db: D1Database, secrets: Secrets): Promise<Finding[]> {
  const { results: tables } = await db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'")
    .all<{ name: string }>();
  const findings: Finding[] = [];
  for (const { name } of tables) {
    const { results: rows } = await db.prepare(`SELECT * FROM "${name.replace(/"/g, '""')}"`).all();
    rows.forEach((row, index) => findings.push(...findSecrets(JSON.stringify(row), secrets, `D1 ${name} row ${index}`)));
  }
  return findings;
}

/** The names of D1's tables, to show a scan covered them. */
export async function d1Tables(db: D1Database): Promise<string[]> {
  const { results } = await db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' ORDER BY name")
    .all<{ name: string }>();
  return results.map((row) => row.name);
}

/** Every key name and value in a KV namespace. */
export async function scanKv(kv: KVNamespace, label: string, secrets: Secrets): Promise<Finding[]> {
  const findings: Finding[] = [];
  let cursor: string | undefined;
  do {
    const page: KVNamespaceListResult<unknown> = await kv.list(cursor ? { cursor } : {});
    for (const { name } of page.keys) {
      findings.push(...findSecrets(name, secrets, `KV ${label} key`));
      const value = await kv.get(name, 'text');
      if (value !== null) findings.push(...findSecrets(value, secrets, `KV ${label} ${name}`));
    }
    cursor = page.list_complete ? undefined : page.cursor;
  } while (cursor);
  return findings;
}

/** Every object in an R2 bucket: key, custom metadata and body (bodies are always consumed). */
export async function scanR2(bucket: R2Bucket, secrets: Secrets): Promise<Finding[]> {
  const findings: Finding[] = [];
  let cursor: string | undefined;
  do {
    const page = await bucket.list({ include: ['customMetadata'], ...(cursor ? { cursor } : {}) });
    for (const object of page.objects) {
      findings.push(...findSecrets(object.key + JSON.stringify(object.customMetadata ?? {}), secrets, `R2 key ${object.key}`));
      const body = await bucket.get(object.key);
      if (body !== null) findings.push(...findSecrets(await body.text(), secrets, `R2 ${object.key}`));
    }
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return findings;
}

/** Every SQLite table and every KV-API key of every instance of a Durable Object namespace. */
export async function scanDurableObjects<T extends Rpc.DurableObjectBranded | undefined>(
  namespace: DurableObjectNamespace<T>,
  label: string,
  secrets: Secrets,
): Promise<Finding[]> {
  const findings: Finding[] = [];
  for (const id of await listDurableObjectIds(namespace)) {
    const stub = namespace.get(id);
    const dump = await runInDurableObject(stub, async (_instance: unknown, state: DurableObjectState) => {
      const out: string[] = [];
      const tables = state.storage.sql
        .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'")
        .toArray();
      for (const { name } of tables) {
        // A ledger shard's compressed values (states, operations answers) scanned as the JSON they hold.
        const rows = state.storage.sql.exec(`SELECT * FROM "${name.replace(/"/g, '""')}"`).toArray();
        out.push(JSON.stringify(rows.map((row) => Object.fromEntries(Object.entries(row).map(([column, value]) => [column, storedText(value)])))));
      }
      const entries = await state.storage.list();
      out.push(JSON.stringify([...entries]));
      return out.join('\n');
    });
    findings.push(...findSecrets(dump, secrets, `DO ${label} ${id.toString().slice(0, 12)}`));
  }
  return findings;
}

/** Captures console output (every level) from here on; `restore()` puts the console back. */
export function captureConsole(): { lines: string[]; restore: () => void } {
  const lines: string[] = [];
  const levels = ['log', 'info', 'warn', 'error', 'debug'] as const;
  const spies = levels.map((level) =>
    vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
      lines.push(`console.${level}: ${args.map((arg) => (typeof arg === 'string' ? arg : safeStringify(arg))).join(' ')}`);
    }),
  );
  return { lines, restore: () => spies.forEach((spy) => spy.mockRestore()) };
}

/** Records every message sent to a queue (send and sendBatch), letting the real send go through. */
export function recordQueue(queue: Queue): { messages: unknown[]; restore: () => void } {
  const messages: unknown[] = [];
  const originalSend = queue.send.bind(queue);
  const originalSendBatch = queue.sendBatch.bind(queue);
  const send = vi.spyOn(queue, 'send').mockImplementation(async (body, options) => {
    messages.push(body);
    return originalSend(body, options);
  });
  const sendBatch = vi.spyOn(queue, 'sendBatch').mockImplementation(async (batch, options) => {
    for (const message of batch) messages.push(message.body);
    return originalSendBatch(batch, options);
  });
  return {
    messages,
    restore: () => {
      send.mockRestore();
      sendBatch.mockRestore();
    },
  };
}

function safeStringify(value: unknown): string {
  if (value instanceof Error) return `${value.name}: ${value.message}\n${value.stack ?? ''}`;
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}

/** A readable failure message: one line per finding. */
export function describeFindings(findings: Finding[]): string {
  return findings.map((f) => `${f.kind} in ${f.where}: …${f.context}…`).join('\n');
}

/** Every row of a Durable Object's SQLite tables (a ledger shard, a sandbox acquirer). */
export async function scanObject(stub: DurableObjectStub, label: string, secrets: Secrets): Promise<Finding[]> {
  const rows = await objectRowsAsText(stub);
  return rows.flatMap((row) => findSecrets(row.text, secrets, `${label} ${row.where}`));
}
