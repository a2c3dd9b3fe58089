/** The observers that feed the host's reality back (observers/adapters.ts' real adapters from src/host). */
import type { DaemonConfig } from '../config/daemon-config.ts';
import type { Db } from '../db/types.ts';
import { createExpiryFilesAdapter } from '../host/expiry-files-adapter.ts';
import { lxcPathOf } from '../host/layout.ts';
import { createLiveLookAdapter, createLxcMonitorAdapter } from '../host/lxc/observer-adapters.ts';
import type { createNetworkAdapter } from '../host/network/network-adapter.ts';
import type { createHostProxyAdapter } from '../host/proxy/host-proxy-adapter.ts';
import type { StorageDrivers } from '../host/storage/registry.ts';
import { createBackupExpiryObserver } from '../observers/backup-expiry.ts';
import { createContainerEventsObserver, type createContainerObserver } from '../observers/container-observer.ts';
import { createExecOutputExpiryObserver } from '../observers/exec-output-expiry.ts';
import type { createDriftReporter, createObserverRunner } from '../observers/index.ts';
import { createLiveDriftObserver } from '../observers/live-drift-observer.ts';
import { createNetworkObserver } from '../observers/network-observer.ts';
import { createPoolObserver } from '../observers/pool-observer.ts';
import { createProxyDriftObserver } from '../observers/proxy-drift-observer.ts';
import type { LiveRegistry } from '../reconcilers/container/ensure-live.ts';
import type { AgentOptions } from './types.ts';

export function registerObservers(input: {
  config: DaemonConfig;
  opts: AgentOptions;
  recorded: Db;
  observers: ReturnType<typeof createObserverRunner>;
  containerObserver: ReturnType<typeof createContainerObserver>;
  drift: ReturnType<typeof createDriftReporter>;
  live: LiveRegistry;
  network: ReturnType<typeof createNetworkAdapter>;
  proxy: ReturnType<typeof createHostProxyAdapter>;
  storage: StorageDrivers;
}): void {
  const { config, opts, recorded, observers, containerObserver, drift, live, network, proxy, storage } = input;
  const expiryFiles = createExpiryFilesAdapter();
  observers.register(containerObserver);
  observers.register(
    createContainerEventsObserver({
      lxcPath: lxcPathOf(config.stateDir),
      monitor: createLxcMonitorAdapter(),
      onEvent: (ev) => containerObserver.onMonitorEvent(ev),
    }),
  );
  observers.register(
    createLiveDriftObserver({
      live,
      look: createLiveLookAdapter(),
      report: drift.report,
      ...(opts.liveObserveMs ? { intervalMs: opts.liveObserveMs } : {}),
    }),
  );
  observers.register(createProxyDriftObserver({ live, proxy, report: drift.report }));
  observers.register(
    createBackupExpiryObserver({
      db: recorded,
      stateDir: config.stateDir,
      node: config.nodeName,
      files: expiryFiles,
      ...(opts.backupExpiryMs ? { intervalMs: opts.backupExpiryMs } : {}),
    }),
  );
  observers.register(createExecOutputExpiryObserver({ stateDir: config.stateDir, files: expiryFiles }));
  observers.register(
    createNetworkObserver({
      db: recorded,
      stateDir: config.stateDir,
      node: config.nodeName,
      network,
      report: drift.report,
      ...(opts.networkObserveMs ? { intervalMs: opts.networkObserveMs } : {}),
    }),
  );
  observers.register(
    createPoolObserver({
      db: recorded,
      node: config.nodeName,
      stateDir: config.stateDir,
      driverFor: storage.driverFor,
      report: drift.report,
      ...(opts.poolObserveMs ? { intervalMs: opts.poolObserveMs } : {}),
    }),
  );
}
