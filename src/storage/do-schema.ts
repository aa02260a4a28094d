/**
 * A Durable Object's SQLite tables, versioned by the object itself: its `MIGRATIONS` are SQL steps
 * in order, the first creating a `meta` table whose one row records `schema_version`, the number of
 * steps applied. An object written by an older version gets the steps it lacks when next used, so
 * no deploy has to visit every object.
 */

/** Whether the object has its tables yet (an object never written has none). */
export function hasTables(sql: SqlStorage): boolean {
  return sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").toArray().length > 0;
}

/** The steps applied, as the meta row records them (0: no tables, or no row yet). */
export function recordedVersion(sql: SqlStorage): number {
  return hasTables(sql) ? (sql.exec<{ v: number }>('SELECT schema_version AS v FROM meta').toArray()[0]?.v ?? 0) : 0;
}

/** Applies the steps after the first `applied` ones; the caller records the new version in its meta row. */
export function migrate(sql: SqlStorage, migrations: readonly string[], applied: number = recordedVersion(sql)): void {
  for (const step of migrations.slice(applied)) sql.exec(step);
}
