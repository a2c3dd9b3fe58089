import os from 'node:os';
import { createAgent } from './agent.ts';
import { DaemonConfigError, loadDaemonConfig } from './config/daemon-config.ts';
import { createIdleGc } from './idle-gc.ts';

/** Process entry: read the environment once, start the agent, stop it cleanly on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadDaemonConfig(process.env, os.hostname());
  } catch (e) {
    if (e instanceof DaemonConfigError) {
      process.stderr.write(`svcd: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  const idleGc = createIdleGc();
  const agent = await createAgent(config, { onRequest: idleGc.activity });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    agent.log.info({ signal }, 'signal received');
    agent
      .stop()
      .then(() => process.exit(0))
      .catch((e: unknown) => {
        process.stderr.write(`svcd: error while stopping: ${String(e)}\n`);
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  // SIGPWR = the host is shutting down: stop the containers (by boot.stop.priority), then exit.
  process.on('SIGPWR', () => {
    if (stopping) return;
    stopping = true;
    agent.log.info({ signal: 'SIGPWR' }, 'host shutdown requested');
    agent
      .shutdownHost()
      .then(() => process.exit(0))
      .catch((e: unknown) => {
        process.stderr.write(`svcd: error during host shutdown: ${String(e)}\n`);
        process.exit(1);
      });
  });
  process.on('SIGINT', () => stop('SIGINT'));
  // SIGUSR2 (root only, as the daemon runs as root): one full resync pass now; its time is logged ('resync pass done').
  process.on('SIGUSR2', () => void agent.reconcile.resync('SIGUSR2').catch((e: unknown) => agent.log.warn({ err: e }, 'resync not started')));
}

main().catch((e: unknown) => {
  process.stderr.write(`svcd: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
