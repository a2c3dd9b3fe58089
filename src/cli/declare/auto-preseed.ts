import { DocumentError, type DeviceMap, type HostDoc, type StringMap } from './document.ts';
import type { HostState } from './host-state.ts';

export const AUTO_BRIDGE = 'svcdbr0';

export interface AutoOptions {
  storageBackend?: string;
  networkAddress?: string;
  networkPort?: number;
  trustPassword?: string;
}

/** `[::]` for a bare IPv6 address, as `core.https_address` wants it. */
const hostPort = (address: string, port: number) =>
  `${address.includes(':') && !address.startsWith('[') ? `[${address}]` : address}:${port}`;

/**
 * What `svcd init --auto` asks for, as a preseed, following `lxd init --auto`: the `default` pool
 * (dir unless told) and the default profile's root disk where missing; and, when the server has no
 * managed network and the default profile no nic, a managed bridge `svcdbr0` whose subnets the
 * server picks as LXD's does for `auto` (a free random 10.x.y.1/24 that no host route or interface
 * uses, and an fd42: ULA /64), with NAT, joined by the default profile's `eth0`. Pure.
 */
export function autoPreseed(host: HostState, opts: AutoOptions): HostDoc {
  const doc: HostDoc = {};
  const config: StringMap = {};
  if (opts.networkAddress !== undefined)
    config['core.https_address'] = hostPort(opts.networkAddress, opts.networkPort ?? 8443);
  if (opts.trustPassword !== undefined) config['core.trust_password'] = opts.trustPassword;
  if (Object.keys(config).length) doc.config = config;
  const pool = host.storage_pools.find((p) => p.name === 'default');
  // svcd makes a `default` dir pool at first start; a pool is never replaced behind the user's back.
  if (pool && opts.storageBackend && pool.driver !== opts.storageBackend)
    throw new DocumentError(
      `storage pool "default": key "driver": the pool exists with driver ${pool.driver}; --storage-backend ${opts.storageBackend} cannot change it (delete the pool first)`,
    );
  if (!pool) doc.storage_pools = [{ name: 'default', driver: opts.storageBackend ?? 'dir', config: {} }];
  const have = host.profiles.find((p) => p.name === 'default')?.devices ?? {};
  const network = !host.networks.some((n) => n.managed) && !Object.values(have).some((d) => d.type === 'nic');
  if (network)
    doc.networks = [
      {
        name: AUTO_BRIDGE,
        type: 'bridge',
        config: { 'ipv4.address': 'auto', 'ipv4.nat': 'true', 'ipv6.address': 'auto', 'ipv6.nat': 'true' },
      },
    ];
  const devices: DeviceMap = {};
  if (!Object.values(have).some((d) => d.type === 'disk' && d.path === '/'))
    devices.root = { type: 'disk', path: '/', pool: 'default' };
  if (network) devices.eth0 = { type: 'nic', name: 'eth0', network: AUTO_BRIDGE };
  if (Object.keys(devices).length) doc.profiles = [{ name: 'default', devices }];
  return doc;
}
