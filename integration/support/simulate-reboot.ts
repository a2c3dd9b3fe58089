/**
 * A simulated host reboot of one daemon's world, for the reboot test and bench: the daemon killed, its
 * containers stopped, every process whose argv names its state dir (the private PostgreSQL server, dnsmasq,
 * forwarders) killed, the given bridges and svcd's nftables tables deleted, everything mounted under the state
 * dir unmounted and its loop devices detached. Nothing outside the daemon's state dir and bridges is touched.
 */
import { execFile } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Daemon } from './daemon.ts';
import { eventually } from './http.ts';
import { findProcesses } from './lxc-host.ts';
import { cleanupStorageUnder } from './storage-host.ts';

const run = promisify(execFile);

export async function simulateReboot(d: Daemon, bridges: string[]): Promise<void> {
  await d.kill();
  const lxcPath = path.join(d.stateDir, 'containers');
  for (const id of await readdir(lxcPath)) await run('lxc-stop', ['-k', '-n', id, '-P', lxcPath]).catch(() => {});
  const ofStateDir = () => findProcesses((argv) => argv.some((a) => a.includes(d.stateDir)));
  for (const p of await ofStateDir()) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
  await eventually(async () => (await ofStateDir()).length === 0, 'every process of the state dir gone', 10_000);
  for (const bridge of bridges) await run('ip', ['link', 'del', bridge]).catch(() => {});
  for (const table of ['svcd', 'svcd_proxy']) await run('nft', ['delete', 'table', 'inet', table]).catch(() => {});
  await cleanupStorageUnder(d.stateDir);
}
