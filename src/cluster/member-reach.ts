import type { DbOrTx } from '../db/types.ts';
import { NotFoundError, UnavailableError } from '../desired/errors.ts';
import { readMember, type MemberView } from './members.ts';

/**
 * How long a member found online is taken to be so by forwards: far below the offline threshold (seconds), so
 * an Offline member is refused as soon as its row says so, give or take this; a member that cannot be reached
 * meanwhile answers as unreachable (forward-request.ts).
 */
const REACH_MEMO_MS = 1_000;

/**
 * A member to forward to: clustered and online, or a clear error naming it. Members found so are remembered
 * for REACH_MEMO_MS, so a forwarded create+start (four requests) reads the members' rows once, not four times.
 */
export function createMemberReach(db: DbOrTx): (name: string) => Promise<MemberView> {
  const reached = new Map<string, { view: MemberView; at: number }>();
  return async (name) => {
    const memo = reached.get(name);
    if (memo && performance.now() - memo.at < REACH_MEMO_MS) return memo.view;
    const m = await readMember(db, name).catch(() => undefined);
    if (!m?.clustered) throw new NotFoundError(`Cluster member "${name}" not found`);
    if (!m.online) throw new MemberOfflineError(name);
    reached.set(name, { view: m, at: performance.now() });
    return m;
  };
}

/** A request for an object on a member that has not renewed its heartbeat: answered at once, never after a timeout. */
export class MemberOfflineError extends UnavailableError {
  constructor(readonly member: string) {
    super(`Cluster member "${member}" is offline: it holds this object, try again when it is back`);
  }
}
