import { type SQL, sql } from 'drizzle-orm';

/**
 * A statement built once per database handle (drizzle's `prepare`), for the few that every reconcile runs: drizzle
 * builds a statement's SQL text anew at each run, which took about 0.1 ms for a select of a wide table once warm,
 * and 1-2 ms cold (a boot runs each of these once per container it starts). The values are placeholders
 * (`sql.placeholder`), filled at each run with the columns' encoders, as an unprepared statement's are. A
 * transaction's handle lives for one transaction, so its statements are built for it as before.
 */
export function preparedPer<D extends object, P>(build: (db: D) => P): (db: D) => P {
  const built = new WeakMap<D, P>();
  return (db) => {
    let p = built.get(db);
    if (p === undefined) {
      p = build(db);
      built.set(db, p);
    }
    return p;
  };
}

/**
 * In a prepared upsert's update, the value its insert would have written to `column` (the EXCLUDED row): the
 * update's set cannot take placeholders.
 */
export const excluded = (column: { name: string }): SQL => sql`excluded.${sql.identifier(column.name)}`;
