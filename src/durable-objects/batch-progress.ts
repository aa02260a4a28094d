import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../env';

/** One per batch: its state machine and progress counters (SQLite storage, RPC methods). */
export class BatchProgress extends DurableObject<Env> {}
