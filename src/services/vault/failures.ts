/** What the vault's commands answer instead of throwing, for a call the client can fix (routes/vault.ts maps them to statuses). */

/** Failures a client can fix, each with a msg naming the field. */
export type VaultFailure =
  | { ok: false; reason: 'invalid'; msg: string }
  | { ok: false; reason: 'not_found'; msg: string }
  | { ok: false; reason: 'conflict'; msg: string }
  /** `?validate=true`: the card's verification was not approved; nothing was stored. */
  | { ok: false; reason: 'declined'; msg: string };

/** A write refused by a primary key or unique index: a conflict, answered 409. */
export const isUniqueViolation = (err: unknown) => err instanceof Error && /UNIQUE constraint failed/.test(err.message);
