/**
 * Converge a bridge's ports that svcd owns: external interfaces (`bridge.external_interfaces`) and
 * tunnels (`<network>-<tunnel>`). What svcd made is recorded in `<dir>/ports.json` (the tunnels' argv,
 * the external interfaces) before it is made, so a tunnel whose settings changed is recreated and one
 * no longer wanted is deleted — and nothing svcd did not make (a container's veth, a bridge whose name
 * happens to start with `<network>-`) is ever touched.
 */
import { readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseIpv4Routes } from '../lxc/parse-proc-net.ts';
import { deleteLinkIfPresent, readLinkFacts, type HostRoots, type RunIp } from './converge-bridge.ts';
import { enslaveArgs, linkDeleteArgs, tunnelAddArgs, tunnelInterfaceName } from './ip-args.ts';
import type { NetworkSpec } from './types.ts';

interface PortsRecord {
  /** Tunnel interface → the argv it was created with. */
  tunnels: Record<string, string[]>;
  external: string[];
}

const recordFile = (dir: string) => path.join(dir, 'ports.json');

export async function readPortsRecord(dir: string): Promise<PortsRecord> {
  const raw = await readFile(recordFile(dir), 'utf8').catch(() => '');
  try {
    const r = JSON.parse(raw) as Partial<PortsRecord>;
    return { tunnels: r.tunnels ?? {}, external: r.external ?? [] };
  } catch {
    return { tunnels: {}, external: [] };
  }
}

async function writeRecord(dir: string, r: PortsRecord): Promise<void> {
  const tmp = `${recordFile(dir)}.tmp`;
  await writeFile(tmp, JSON.stringify(r));
  await rename(tmp, recordFile(dir));
}

/** The interface of the host's IPv4 default route (the device a multicast vxlan uses by default). */
async function defaultRouteDevice(roots: HostRoots): Promise<string | undefined> {
  const t = await readFile(path.join(roots.procRoot, 'net/route'), 'utf8').catch(() => '');
  return parseIpv4Routes(t).find((r) => r.mask === 0 && r.destination === 0)?.iface;
}

const same = (a: readonly string[] | undefined, b: readonly string[]) =>
  !!a && a.length === b.length && a.every((x, i) => x === b[i]);

export async function convergePorts(spec: NetworkSpec, roots: HostRoots, ip: RunIp): Promise<void> {
  const old = await readPortsRecord(spec.dir);
  const needsDev = spec.tunnels.some((t) => t.protocol === 'vxlan' && !t.remote && !t.interface);
  const dev = needsDev ? await defaultRouteDevice(roots) : undefined;
  const tunnels = Object.fromEntries(
    spec.tunnels.map((t) => [tunnelInterfaceName(spec.name, t.name), tunnelAddArgs(spec.name, t, dev)]),
  );
  // record first: a crash after creating leaves a tunnel svcd knows about
  await writeRecord(spec.dir, {
    tunnels: { ...old.tunnels, ...tunnels },
    external: [...new Set([...old.external, ...spec.externalInterfaces])],
  });

  for (const name of Object.keys(old.tunnels)) if (!tunnels[name]) await deleteLinkIfPresent(roots, ip, name);
  for (const [name, argv] of Object.entries(tunnels)) {
    let link = await readLinkFacts(roots, name);
    if (link && !same(old.tunnels[name], argv)) {
      await ip(linkDeleteArgs(name));
      link = undefined;
    }
    if (!link) await ip(argv);
    if (!link || link.master !== spec.name || !link.up) await ip(enslaveArgs(name, spec.name));
  }

  for (const name of old.external) {
    if (spec.externalInterfaces.includes(name)) continue;
    const link = await readLinkFacts(roots, name);
    if (link?.master === spec.name) await ip(['link', 'set', 'dev', name, 'nomaster']);
  }
  for (const name of spec.externalInterfaces) {
    const link = await readLinkFacts(roots, name);
    if (!link) throw new Error(`external interface ${name} of network ${spec.name} does not exist`);
    if (link.master !== spec.name || !link.up) await ip(enslaveArgs(name, spec.name));
  }
  await writeRecord(spec.dir, { tunnels, external: [...spec.externalInterfaces] });
}

/** Delete the tunnels svcd made for a network and release its external interfaces (removal). */
export async function removePorts(dir: string, name: string, roots: HostRoots, ip: RunIp): Promise<void> {
  const old = await readPortsRecord(dir);
  for (const t of Object.keys(old.tunnels)) await deleteLinkIfPresent(roots, ip, t);
  for (const e of old.external)
    if ((await readLinkFacts(roots, e))?.master === name) await ip(['link', 'set', 'dev', e, 'nomaster']);
}
