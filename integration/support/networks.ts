/**
 * Managed networks in tests: a free private /24 for a test bridge, the safe config every test network
 * uses (no NAT, no routing, no IPv6: traffic stays on the test's own bridge), and what the host shows of
 * a bridge, its dnsmasq and svcd's nftables table.
 */
import { execFile } from 'node:child_process';
import { readFile, readlink } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { findProcesses } from './lxc-host.ts';

const run = promisify(execFile);

/** A 10.x.y.0/24 no host route uses (x,y from the pid and a counter: test files running at once differ). */
export async function freeSubnet24(salt = 0): Promise<{ gateway: string; cidr: string; prefix3: string }> {
  const routes = await readFile('/proc/net/route', 'utf8');
  const used = new Set(
    routes
      .split('\n')
      .slice(1)
      .map((l) => l.trim().split(/\s+/)[1])
      .filter((h): h is string => !!h && h.length === 8)
      .map((h) => [3, 2, 1].map((i) => parseInt(h.slice(i * 2, i * 2 + 2), 16)).join('.')),
  );
  for (let i = 0; i < 4000; i++) {
    const n = (process.pid * 7 + salt * 131 + i * 17) % 60000;
    const prefix3 = `10.${100 + (n % 150)}.${Math.floor(n / 150) % 250}`;
    if (!used.has(prefix3)) return { gateway: `${prefix3}.1`, cidr: `${prefix3}.1/24`, prefix3 };
  }
  throw new Error('no free 10.x.y.0/24');
}

/** The config of a test network on `cidr`: nothing leaves the bridge. */
export const safeNetworkConfig = (cidr: string, extra: Record<string, string> = {}): Record<string, string> => ({
  'ipv4.address': cidr,
  'ipv4.nat': 'false',
  'ipv4.routing': 'false',
  'ipv6.address': 'none',
  ...extra,
});

/** Whether host interface `name` exists, and its master (the bridge it is enslaved to). */
export async function hostLink(name: string): Promise<{ exists: boolean; master?: string; operstate?: string }> {
  const op = await readFile(`/sys/class/net/${name}/operstate`, 'utf8').then(
    (t) => t.trim(),
    () => undefined,
  );
  if (op === undefined) return { exists: false };
  const master = await readlink(`/sys/class/net/${name}/master`).then(
    (p) => p.split('/').pop(),
    () => undefined,
  );
  return { exists: true, operstate: op, ...(master ? { master } : {}) };
}

/** The IPv4 addresses (CIDR) on a host interface. */
export async function hostAddresses(name: string): Promise<string[]> {
  const { stdout } = await run('ip', ['-j', '-4', 'addr', 'show', 'dev', name]).catch(() => ({ stdout: '[]' }));
  return (JSON.parse(stdout || '[]') as { addr_info?: { local: string; prefixlen: number }[] }[]).flatMap((l) =>
    (l.addr_info ?? []).map((a) => `${a.local}/${a.prefixlen}`),
  );
}

/** Processes whose command line mentions `needle` (e.g. a network's directory: its dnsmasq). */
export async function processesMentioning(needle: string, exe = 'dnsmasq'): Promise<number[]> {
  return (await findProcesses((a) => path.basename(a[0] ?? '') === exe && a.some((x) => x.includes(needle)))).map(
    (p) => p.pid,
  );
}

/** svcd's `inet svcd` table as `nft -j` shows it, or undefined when it does not exist. */
export async function svcdTable(family = 'inet'): Promise<{ nftables: Record<string, any>[] } | undefined> {
  return run('nft', ['-j', 'list', 'table', family, 'svcd']).then(
    (r) => JSON.parse(r.stdout),
    () => undefined,
  );
}

/** The rules of svcd's table, each as nft prints it (one line per rule), for matching by text. */
export async function svcdRuleText(family = 'inet'): Promise<string> {
  return run('nft', ['list', 'table', family, 'svcd']).then(
    (r) => r.stdout,
    () => '',
  );
}
