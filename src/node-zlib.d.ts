/** The one function of the runtime's node:zlib the ledger shard's record codec uses (nodejs_compat in wrangler.toml). */
declare module 'node:zlib' {
  export function deflateRawSync(data: Uint8Array, options?: { level?: number }): Uint8Array;
}
