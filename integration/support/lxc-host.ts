/**
 * Helpers for the LXC host tests: whether they can run, root's subordinate id range, and finding the
 * processes a test started (lxc-monitor, lxc-monitord) by their command line, read from /proc.
 */
import { access, appendFile, readdir, readFile, readlink } from 'node:fs/promises';
import path from 'node:path';
import { parseSubids } from '../../src/host/idmap/parse-subids.ts';

/** The range the tests add for root when it has none (LXD's usual large delegation). */
export const TEST_SUBID_LINE = 'root:1000000:1000000000';

async function onPath(tool: string): Promise<boolean> {
  for (const dir of ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin']) {
    if (
      await access(path.join(dir, tool)).then(
        () => true,
        () => false,
      )
    )
      return true;
  }
  return false;
}

/** Why the real-LXC tests cannot run here, or undefined when they can. */
export async function lxcSkipReason(): Promise<string | undefined> {
  if (!(await onPath('lxc-start'))) return 'lxc-start is not installed';
  if (process.getuid?.() !== 0) return 'the LXC host tests need root';
  return undefined;
}

/** Give root a subordinate uid and gid range unless it already has one (idempotent). */
export async function ensureRootSubids(): Promise<void> {
  for (const file of ['/etc/subuid', '/etc/subgid']) {
    const text = await readFile(file, 'utf8').catch(() => '');
    if (parseSubids(text, 'root', 0).length > 0) continue;
    await appendFile(file, `${text === '' || text.endsWith('\n') ? '' : '\n'}${TEST_SUBID_LINE}\n`);
  }
}

export interface ProcInfo {
  pid: number;
  argv: string[];
}

/** Processes whose argv satisfies `match` (from /proc/<pid>/cmdline; vanished processes are skipped). */
export async function findProcesses(match: (argv: string[]) => boolean): Promise<ProcInfo[]> {
  const out: ProcInfo[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const raw = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    const argv = raw.split('\0').filter(Boolean);
    if (argv.length > 0 && match(argv)) out.push({ pid: Number(entry), argv });
  }
  return out;
}

/** Whether the process holds a socket (lxc-monitor has connected to lxc-monitord once it does). */
export async function hasSocket(pid: number): Promise<boolean> {
  for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [] as string[])) {
    if ((await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '')).startsWith('socket:')) return true;
  }
  return false;
}

/** The lxc-monitord serving `lxcPath` (spawned by lxc-monitor; it lingers a while after its last client). */
export const monitordFor = (lxcPath: string) =>
  findProcesses((a) => path.basename(a[0] ?? '') === 'lxc-monitord' && a[1] === lxcPath);
