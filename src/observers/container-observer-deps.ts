/** What the container observer and its stop judge are given (one file, so neither imports the other). */
import type { WriteCounter } from '../db/local-writes.ts';
import type { Db } from '../db/types.ts';
import type { EventBus } from '../events/index.ts';
import type { LxcAdapter } from '../reconcilers/adapters.ts';
import type { RuntimeLogger } from '../reconcilers/runtime/types.ts';
import type { InitExitAdapter } from './adapters.ts';

export interface ContainerObserverDeps {
  db: Db;
  /** Set when this process is the database's only writer (Database.localWrites). */
  localWrites: WriteCounter | undefined;
  node: string;
  /** LXC's view: one container's state, and the listing the periodic sample reads. */
  lxc: Pick<LxcAdapter, 'state' | 'list'>;
  lxcPath: string;
  /** How a stopped container's init ended (its LXC log): the stop judge's evidence. */
  initExit: InitExitAdapter;
  /** The state dir: where each container's LXC log is (`logs/<project>_<name>/lxc.log`). */
  stateDir: string;
  bus: EventBus;
  report: (kind: string, key: string, what: string) => void;
  /** Drift to act on after a delay (the crash loop backoff): the reconcile is scheduled on the clock, no poll waits for it. */
  reportAfter: (kind: string, key: string, delayMs: number, what: string) => void;
  log?: Pick<RuntimeLogger, 'info' | 'warn'>;
  intervalMs?: number;
  /** Containers a periodic sample looks at (default 100; see sample()). */
  perTick?: number;
  now?: () => number;
}
