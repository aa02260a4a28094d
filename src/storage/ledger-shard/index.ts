/**
 * A ledger shard's storage (durable-objects/ledger-shard): one merchant's transactions for one
 * period, in the object's own SQLite (docs/transactions.md, "The ledger"). One module per concern:
 * the tables and meta (`schema`), the packed records (`records`), `claims`, `pages`, `states`,
 * `operations` (and `operation-blocks`, a batch chunk's claims in flight), what a settlement run reads and marks (`settlement`) and what it hands over (`handoff`). Callers outside the shard
 * import from here.
 */
export * from './schema';
export * from './records';
export * from './claims';
export * from './pages';
export * from './states';
export * from './settlement';
export * from './handoff';
export * from './operations';
export * from './operation-blocks';
export * from './bulk';
export * from './operation-answers';
