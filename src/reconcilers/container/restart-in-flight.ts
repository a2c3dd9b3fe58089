import type { Db } from '../../db/types.ts';
import { CONTAINER_KIND } from '../../desired/containers.ts';
import type { ContainerRow } from '../../desired/schema/index.ts';
import { readFacts } from '../status-settler.ts';

/**
 * Whether svcd itself is restarting the container: a restart was asked (`powerRequest`) and the
 * reconciler has not recorded it as carried out (its `doneSeq` fact, written once the container
 * runs again). A stop seen meanwhile is svcd's, not the container's.
 */
export async function restartInFlight(db: Db, c: Pick<ContainerRow, 'id' | 'powerRequest'>): Promise<boolean> {
  const req = c.powerRequest;
  if (req?.action !== 'restart') return false;
  const facts = (await readFacts(db, CONTAINER_KIND, c.id)) as { doneSeq?: number };
  return req.seq > (facts.doneSeq ?? 0);
}
