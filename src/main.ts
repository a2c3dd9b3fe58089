import { realpathSync } from 'node:fs';
import os from 'node:os';
import { createAgent } from './agent.ts';
import { DaemonConfigError, loadDaemonConfig } from './config/daemon-config.ts';
import { runCommand } from './host/exec.ts';
import { EmbeddedDatabaseRefused, REFUSED_EXIT_CODE } from './host/postgres/compute-server-adoption.ts';
import { SchemaTooNewError } from './db/schema-compat.ts';
import { createSdNotify, notifyHelperPath } from './host/systemd/sd-notify.ts';
import { createIdleGc } from './idle-gc.mjs';

/** Process entry (`svcd daemon`): read the environment once, start the agent, stop it cleanly on SIGTERM/SIGINT. */
export async function main(): Promise<void> {
  let config: ReturnType<typeof loadDaemonConfig>;
  try {
    config = loadDaemonConfig(process.env, os.hostname());
  } catch (e) {
    if (e instanceof DaemonConfigError) {
      process.stderr.write(`svcd: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  // Under systemd (Type=notify): READY=1 once the API answers, STOPPING=1 when stopping. Not passed on to children.
  const notifySocket = process.env.NOTIFY_SOCKET;
  delete process.env.NOTIFY_SOCKET;
  // 2 s windows: memory is back within 4 s of a burst's end (5 s windows took up to 10 s); a burst is 50
  // requests at least, so that a client polling now and then does not cost a compacting collection each time.
  const idleGc = createIdleGc(2_000, { minActivity: 50 });
  const agent = await createAgent(config, { onRequest: idleGc.activity }).catch((e: unknown) => {
    // Data another PostgreSQL major version made, or a schema a newer svcd made incompatible with this one:
    // starting again cannot help (the unit does not restart this code).
    if (!(e instanceof EmbeddedDatabaseRefused) && !(e instanceof SchemaTooNewError)) throw e;
    process.stderr.write(`svcd: ${e.message}\n`);
    process.exit(REFUSED_EXIT_CODE);
  });
  const notify = createSdNotify({
    socket: notifySocket,
    pid: process.pid,
    helper: notifyHelperPath(),
    run: runCommand,
    log: agent.log,
  });
  await notify.send('ready');
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    agent.log.info({ signal }, 'signal received');
    notify
      .send('stopping')
      .then(() => agent.stop())
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
    notify
      .send('stopping')
      .then(() => agent.shutdownHost())
      .then(() => process.exit(0))
      .catch((e: unknown) => {
        process.stderr.write(`svcd: error during host shutdown: ${String(e)}\n`);
        process.exit(1);
      });
  });
  process.on('SIGINT', () => stop('SIGINT'));
  // SIGUSR2 (root only, as the daemon runs as root): one full resync pass now; its time is logged ('resync pass done').
  process.on(
    'SIGUSR2',
    () =>
      void agent.reconcile.resync('SIGUSR2').catch((e: unknown) => agent.log.warn({ err: e }, 'resync not started')),
  );
}

/**
 * Run as a file of its own (`node src/main.ts`, as the tests do); `svcd daemon` (src/cli) calls main(). By name:
 * in the bundle bin/svcd runs, every module's import.meta.url is the bundle's, so a comparison with it would hold
 * there too.
 */
const entry = process.argv[1];
if (entry && /(^|\/)main\.[jt]s$/.test(realpathSync(entry))) {
  main().catch((e: unknown) => {
    process.stderr.write(`svcd: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  });
}
