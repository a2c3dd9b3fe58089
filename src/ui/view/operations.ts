/** The operations the dashboard lists, pure: the daemon's history and what the event stream told since. */
export interface OperationView {
  id: string;
  created_at: string;
  updated_at: string;
  status: string;
}

/**
 * One entry per operation, the most recently updated state of each (an event may be newer than the
 * list it arrived after, or older than a list read after it), newest created first. On a tie the
 * earlier list's entry stays.
 */
export function mergeOperations<T extends OperationView>(...lists: T[][]): T[] {
  const byId = new Map<string, T>();
  for (const list of lists)
    for (const op of list) {
      const had = byId.get(op.id);
      if (!had || op.updated_at > had.updated_at) byId.set(op.id, op);
    }
  return [...byId.values()].sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0));
}
