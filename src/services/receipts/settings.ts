/** A merchant's receipt settings (the admin API's `receipt_settings`; docs/receipts.md, "What a receipt says"). */
import { isoTimestamp, type Clock } from '../../lib/time';
import { findReceiptSettings, upsertReceiptSettingsStatement, type ReceiptSettings } from '../../storage/receipt-settings';

export type { ReceiptSettings };

export function receiptSettings(db: D1Database, merchantId: string): Promise<ReceiptSettings> {
  return findReceiptSettings(db, merchantId);
}

/** Applies the fields given (null clears one) and answers the settings now in force. */
export async function setReceiptSettings(db: D1Database, merchantId: string, changes: Partial<ReceiptSettings>, clock: Clock): Promise<ReceiptSettings> {
  await upsertReceiptSettingsStatement(db, merchantId, changes, isoTimestamp(clock())).run();
  return findReceiptSettings(db, merchantId);
}
