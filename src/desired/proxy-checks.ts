/**
 * Cross-object checks of a container's expanded proxy devices at a desired write: a nat proxy's connect
 * address must be the static address of one of its nics on a managed network; a host listen address must
 * not be another proxy device's (any container), nor one the host cannot give it (`probe`, the API's host
 * service: in use, or no interface of the host has that address). Proxies the container already had with
 * the same listen address are not checked against the host (their own forwarder holds it).
 */
import { and, isNull, ne, or, sql } from 'drizzle-orm';
import type { DbOrTx } from '../db/types.ts';
import { expandStoredContainer } from './containers.ts';
import { nicParentOf } from './devices.ts';
import { isTrue, isWildcard, proxySides, type ProxyAddress } from './devices-proxy.ts';
import { ValidationError } from './errors.ts';
import { readManagedNetwork } from './network-nics.ts';
import { containers, profiles, type ContainerRow } from './schema/index.ts';
import { parseIp } from '../util/ip-cidr.ts';

type Devices = Record<string, Record<string, string>>;

/** A host listen address to check: its protocol, address, ports. */
export interface ListenQuery {
  protocol: 'tcp' | 'udp';
  host: string;
  family: 4 | 6;
  ports: number[];
  wildcard: boolean;
}
/** Why the host cannot give a listen address: one of its ports is taken, or the address is none of the host's. */
export interface ListenConflict {
  port: number;
  why: 'in use' | 'not a local address';
}
export type ListenProbe = (q: ListenQuery) => Promise<ListenConflict | undefined>;

const sameIp = (a: string, b: string) =>
  parseIp(a)?.value === parseIp(b)?.value && parseIp(a)?.family === parseIp(b)?.family;

/** Whether two host listen addresses would take the same socket (same protocol and port; same address, or a wildcard on either side). */
function clash(a: ProxyAddress, b: ProxyAddress): string | undefined {
  if (a.kind === 'unix' || b.kind === 'unix') {
    if (a.kind !== 'unix' || b.kind !== 'unix') return undefined;
    return a.path === b.path && a.abstract === b.abstract ? `unix:${a.abstract ? '@' : ''}${a.path}` : undefined;
  }
  if (a.kind !== b.kind) return undefined;
  if (!(isWildcard(a) || isWildcard(b) || (a.family === b.family && sameIp(a.host, b.host)))) return undefined;
  const port = a.ports.find((p) => b.ports.includes(p));
  return port === undefined ? undefined : `${a.kind}:${a.family === 6 ? `[${a.host}]` : a.host}:${port}`;
}

/** The proxies of `devices` that listen on the host, parsed. */
function hostListens(devices: Devices): [string, Record<string, string>, ProxyAddress][] {
  return Object.entries(devices)
    .filter(([, d]) => d.type === 'proxy' && (d.bind ?? 'host') === 'host' && d.listen)
    .map(([n, d]) => [n, d, proxySides(d).listen]);
}

/** nat: the connect address must be a static address of one of the container's nics on a managed network. */
async function checkNat(db: DbOrTx, name: string, dev: Record<string, string>, devices: Devices): Promise<void> {
  const { connect } = proxySides(dev);
  if (connect.kind === 'unix') return;
  const key = connect.family === 4 ? 'ipv4.address' : 'ipv6.address';
  for (const d of Object.values(devices)) {
    if (d.type !== 'nic' || !d[key]) continue;
    if (!isWildcard(connect) && !sameIp(d[key]!, connect.host)) continue;
    if (await readManagedNetwork(db, nicParentOf(d))) return;
  }
  throw new ValidationError(
    `Device "${name}" (proxy): "nat" needs "connect" to be the static "${key}" of one of the container's nics on a managed network (or ${connect.family === 4 ? '0.0.0.0' : '[::]'} for that address); ${connect.host} is none`,
  );
}

export async function checkContainerProxies(
  db: DbOrTx,
  current: ContainerRow | undefined,
  devices: Devices,
  probe?: ListenProbe,
): Promise<void> {
  const mine = hostListens(devices);
  for (const [name, dev] of Object.entries(devices))
    if (dev.type === 'proxy' && isTrue(dev.nat)) await checkNat(db, name, dev, devices);
  if (mine.length === 0) return;
  // Two of its own on one address.
  for (let i = 0; i < mine.length; i++)
    for (let j = i + 1; j < mine.length; j++) {
      const c = clash(mine[i]![2], mine[j]![2]);
      if (c)
        throw new ValidationError(
          `Device "${mine[j]![0]}" (proxy): "listen" ${c} is already used by device "${mine[i]![0]}"`,
        );
    }
  // Another container's.
  for (const row of await containersWithProxies(db, current?.id)) {
    const theirs = hostListens((await expandStoredContainer(db, row)).devices);
    for (const [name, , listen] of mine)
      for (const [other, , l] of theirs) {
        const c = clash(listen, l);
        if (c)
          throw new ValidationError(
            `Device "${name}" (proxy): "listen" ${c} is already used by device "${other}" of container "${row.name}" (project "${row.project}")`,
          );
      }
  }
  // Taken on the host by something else: new listen addresses only, and not in nat mode (nothing binds).
  if (!probe) return;
  const had = current ? (await expandStoredContainer(db, current)).devices : {};
  const held = (n: string, d: Record<string, string>) =>
    had[n]?.type === 'proxy' && had[n]?.listen === d.listen && !isTrue(had[n]?.nat);
  const fresh = mine.filter(([n, d]) => !isTrue(d.nat) && !held(n, d));
  if (fresh.length === 0) return;
  for (const [name, , listen] of fresh) {
    if (listen.kind === 'unix') continue;
    const hit = await probe({
      protocol: listen.kind,
      host: listen.host,
      family: listen.family,
      ports: listen.ports,
      wildcard: isWildcard(listen),
    });
    const where = `${listen.kind}:${listen.family === 6 ? `[${listen.host}]` : listen.host}:${hit?.port}`;
    if (hit?.why === 'in use')
      throw new ValidationError(`Device "${name}" (proxy): "listen" ${where} is already in use on the host`);
    if (hit)
      throw new ValidationError(
        `Device "${name}" (proxy): "listen" ${where}: ${listen.host} is not an address of the host`,
      );
  }
}

const HAS_PROXY = '$.* ? (@.type == "proxy")';

/**
 * The other live containers that may have a proxy: one of their own, or through a profile they name that
 * has one (a profile of any project by that name: their expansion, done by the caller, settles it). One
 * query, whose rows are only the containers with proxies, not every container.
 */
function containersWithProxies(db: DbOrTx, except: string | undefined): Promise<ContainerRow[]> {
  return db
    .select()
    .from(containers)
    .where(
      and(
        isNull(containers.deletingAt),
        except === undefined ? undefined : ne(containers.id, except),
        or(
          sql`${containers.devices} @? ${HAS_PROXY}::jsonpath`,
          sql`exists (select 1 from ${profiles} where ${profiles.devices} @? ${HAS_PROXY}::jsonpath and ${containers.profiles} ? ${profiles.name})`,
        ),
      ),
    );
}
