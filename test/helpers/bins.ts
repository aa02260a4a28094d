/** Helpers for the BIN data: CSV imports through the admin API and lookups through the public one. */
import { ADMIN_TOKEN, call } from './api';

export interface ImportAnswer {
  imported: number;
  skipped: number;
  errors: { line: number; msg: string }[];
}

export async function importCsv(csv: string, path = '/admin/bins/import'): Promise<ImportAnswer> {
  const response = await call('POST', path, { key: ADMIN_TOKEN, body: csv, headers: { 'Content-Type': 'text/csv' } });
  if (response.status !== 200) throw new Error(`import failed: ${response.status} ${await response.text()}`);
  return (await response.json<{ data: ImportAnswer }>()).data;
}

export function lookupBin(key: string | null, body: unknown): Promise<Response> {
  return call('POST', '/api/lookup/bin/protected', { key, body });
}

export async function lookupOk(key: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await lookupBin(key, body);
  if (response.status !== 200) throw new Error(`lookup failed: ${response.status} ${await response.text()}`);
  return response.json<Record<string, unknown>>();
}
