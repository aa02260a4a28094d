/**
 * D1 access for `running_exports`: the exports of a merchant being written now, so that at most
 * EXPORTS_RUNNING_MAX run at once (docs/limits.md, "Searches and exports"). A row is taken when an
 * export starts and given back when it completes or fails; a row older than the stale bound (an
 * export whose object never finished, or whose release failed) no longer counts, and is deleted
 * when the merchant next starts one.
 */

/**
 * Takes a slot for `exportId` unless the merchant already has `max` slots younger than
 * `staleBefore`: one statement, so two exports started at once cannot both take the last slot.
 * Answers whether the slot was taken.
 */
export async function takeExportSlot(db: D1Database, slot: { merchantId: string; exportId: string; startedAt: string; staleBefore: string; max: number }): Promise<boolean> {
  // The merchant's stale rows go first, in the same transaction: a merchant holds at most `max` rows
  // besides those gone stale since its last export started.
  const [, taken] = await db.batch([
    db.prepare('DELETE FROM running_exports WHERE merchant_id = ?1 AND started_at <= ?2').bind(slot.merchantId, slot.staleBefore),
    db
      .prepare(
        `INSERT INTO running_exports (export_id, merchant_id, started_at)
         SELECT ?1, ?2, ?3
         WHERE (SELECT COUNT(*) FROM running_exports WHERE merchant_id = ?2 AND started_at > ?4) < ?5`,
      )
      .bind(slot.exportId, slot.merchantId, slot.startedAt, slot.staleBefore, slot.max),
  ]);
  return taken?.meta.changes === 1;
}

export async function releaseExportSlot(db: D1Database, exportId: string): Promise<void> {
  await db.prepare('DELETE FROM running_exports WHERE export_id = ?1').bind(exportId).run();
}
