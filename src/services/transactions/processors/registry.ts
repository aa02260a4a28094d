/**
 * A merchant's processors. Every merchant has at least the built-in sandbox processor: it is
 * created on first use (for merchants seeded by SQL as well as those made through the admin API),
 * with a fixed id so that concurrent first uses create it once.
 */
import type { Env } from '../../../env';
import { randomId } from '../../../lib/crypto';
import type { Clock } from '../../../lib/time';
import { isoTimestamp } from '../../../lib/time';
import { insertProcessor, insertProcessorIfAbsent, listProcessors, type ProcessorRecord } from '../../../storage/processors';
import type { PaymentProcessor, ProcessorType } from './processor';
import { SandboxProcessor } from './sandbox';

/** The implementation behind a processor record, bound to that account. */
export function processorFor(env: Env, processor: ProcessorRecord, clock: Clock): PaymentProcessor {
  switch (processor.type) {
    case 'sandbox':
      return new SandboxProcessor(env.SANDBOX_ACQUIRER, processor.id, clock);
  }
}

export function defaultSandboxProcessorId(merchantId: string): string {
  return `sandbox_${merchantId}`;
}

/** The merchant's processors, creating the default sandbox one when there is none. */
export async function merchantProcessors(db: D1Database, merchantId: string, clock: Clock): Promise<ProcessorRecord[]> {
  const processors = await listProcessors(db, merchantId);
  if (processors.length > 0) return processors;
  await insertProcessorIfAbsent(db, {
    id: defaultSandboxProcessorId(merchantId),
    merchant_id: merchantId,
    type: 'sandbox',
    name: 'Sandbox',
    is_default: true,
    created_at: isoTimestamp(clock()),
  });
  return listProcessors(db, merchantId);
}

/** The processor for a request: the named one, or the merchant's default; null when unknown. */
export function pickProcessor(processors: ProcessorRecord[], processorId: string | null): ProcessorRecord | null {
  if (processorId !== null) return processors.find((p) => p.id === processorId) ?? null;
  return processors.find((p) => p.is_default) ?? processors[0] ?? null;
}

export interface NewProcessorInput {
  name: string;
  type: ProcessorType;
  is_default: boolean;
}

export async function addProcessor(
  db: D1Database,
  merchantId: string,
  input: NewProcessorInput,
  clock: Clock,
): Promise<ProcessorRecord> {
  // The implicit default must exist first, or the new one would become the only (and default) processor.
  await merchantProcessors(db, merchantId, clock);
  const processor: ProcessorRecord = {
    id: randomId(20, 'prc_'),
    merchant_id: merchantId,
    type: input.type,
    name: input.name,
    is_default: input.is_default,
    created_at: isoTimestamp(clock()),
  };
  await insertProcessor(db, processor);
  return processor;
}
