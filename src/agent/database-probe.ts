import { sql } from 'drizzle-orm';
import type { Db } from '../db/types.ts';
import { isDatabaseUnreachable } from '../desired/errors.ts';

/**
 * Whether the database answers (the offline keeper's question): `select 1` with a deadline. Unreachable
 * (the driver's, the socket's or the server's codes, desired/errors.ts) or no answer in time is false; any
 * other error means a server that answered, so true.
 */
export async function probeDatabase(db: Db, timeoutMs = 3_000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), timeoutMs);
  });
  try {
    const outcome = await Promise.race([db.execute(sql`select 1`).then(() => 'answered' as const), late]);
    return outcome === 'answered';
  } catch (e) {
    return !isDatabaseUnreachable(e);
  } finally {
    clearTimeout(timer);
  }
}
