/**
 * A network's DHCP host entries: one file per container nic in `<dir>/dnsmasq.hosts/` (dnsmasq's
 * dhcp-hostsdir), named by its key `<container id>.<device name>`. Writes are atomic (temp + rename)
 * and only happen when the content changes; the caller is told whether anything changed.
 */
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { dnsmasqFiles } from './render-dnsmasq-conf.ts';
import { renderDhcpHost } from './render-dhcp-host.ts';
import type { DhcpHostEntry } from './types.ts';

const TMP = '.tmp-';

function entryFile(dir: string, key: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.:-]*$/.test(key) || key.includes('..'))
    throw new Error(`bad DHCP host key ${JSON.stringify(key)}`);
  return path.join(dnsmasqFiles(dir).hostsDir, key);
}

/** Write or remove one entry; true when the file changed. */
export async function writeDhcpHost(dir: string, key: string, entry: DhcpHostEntry | undefined): Promise<boolean> {
  const file = entryFile(dir, key);
  const current = await readFile(file, 'utf8').catch(() => undefined);
  if (!entry) {
    if (current === undefined) return false;
    await rm(file, { force: true });
    return true;
  }
  const content = renderDhcpHost(entry);
  if (current === content) return false;
  await mkdir(path.dirname(file), { recursive: true, mode: 0o755 });
  // dnsmasq ignores dot files in its hosts dir: it sees the entry only once renamed
  const tmp = path.join(path.dirname(file), `${TMP}${key}`);
  await writeFile(tmp, content, { mode: 0o644 });
  await rename(tmp, file);
  return true;
}

/** Remove every entry whose key is not in `keep`; true when one went. */
export async function pruneDhcpHostFiles(dir: string, keep: ReadonlySet<string>): Promise<boolean> {
  const names = await readdir(dnsmasqFiles(dir).hostsDir).catch(() => [] as string[]);
  const stale = names.filter((n) => !keep.has(n));
  await Promise.all(stale.map((n) => rm(path.join(dnsmasqFiles(dir).hostsDir, n), { force: true })));
  return stale.length > 0;
}
