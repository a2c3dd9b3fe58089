import type { LxcMonitorEvent } from '../host/lxc/monitor.ts';
import type { LxcMonitorAdapter } from './adapters.ts';
import type { StreamObserver } from './types.ts';

/** LXC's state events (lxc-monitor) make the poll observer look right away. */
export function createContainerEventsObserver(deps: {
  lxcPath: string;
  monitor: LxcMonitorAdapter;
  onEvent: (ev: LxcMonitorEvent) => void;
}): StreamObserver {
  return {
    name: 'container-events',
    kind: 'stream',
    run: (signal) => deps.monitor.watchStates({ lxcPath: deps.lxcPath, signal, onEvent: deps.onEvent }),
  };
}
