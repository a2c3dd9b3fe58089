/**
 * A running container's proxy devices, live: each (not nat) has a forwarder process running with its
 * spec (started, restarted when the device changed or it died, stopped when the device went); the nat
 * ones are DNAT rules of the container, applied when they change. The forwarders' pid files are their
 * record (host/proxy/); the nat rules applied are recorded in the container's live facts. At a stop or
 * delete everything goes (releaseProxies).
 */
import { isTrue, isWildcard, proxySides } from '../../desired/devices-proxy.ts';
import type { ForwarderSpec, NatRule } from '../../host/proxy/types.ts';
import type { ProxyAdapter } from '../adapters.ts';
import { TerminalError, terminalMessageOf } from '../runtime/index.ts';
import type { ResolvedNic } from './resolve-nics.ts';

type Devices = Record<string, Record<string, string>>;

/** The forwarder of a proxy device of the container whose init is `pid` (bind=host: listens on the host, connects in the container). */
export function forwarderSpecOf(
  containerId: string,
  device: string,
  dev: Record<string, string>,
  pid: number,
): ForwarderSpec {
  const inContainer = dev.bind === 'container';
  const spec: ForwarderSpec = {
    containerId,
    device,
    listenNs: inContainer ? pid : 0,
    listen: dev.listen!,
    connectNs: inContainer ? 0 : pid,
    connect: dev.connect!,
    proxyProtocol: isTrue(dev.proxy_protocol),
    exitWith: pid,
  };
  if (dev.uid !== undefined) spec.listenUid = Number(dev.uid);
  if (dev.gid !== undefined) spec.listenGid = Number(dev.gid);
  if (dev.mode !== undefined) spec.listenMode = dev.mode;
  if (dev['security.uid'] !== undefined) spec.dropUid = Number(dev['security.uid']);
  if (dev['security.gid'] !== undefined) spec.dropGid = Number(dev['security.gid']);
  return spec;
}

/** The DNAT rules of a nat proxy device: the connect address (0.0.0.0/[::]: the nic's static one) on its nic's bridge. */
export function natRuleOf(device: string, dev: Record<string, string>, nics: readonly ResolvedNic[]): NatRule {
  const { listen, connect } = proxySides(dev);
  if (listen.kind === 'unix' || connect.kind === 'unix')
    throw new TerminalError(`proxy "${device}": "nat" cannot forward unix sockets`);
  const key = connect.family === 4 ? 'ipv4' : 'ipv6';
  const nic = nics.find((n) => n.managed && n[key] !== undefined && (isWildcard(connect) || n[key] === connect.host));
  if (!nic)
    throw new TerminalError(
      `proxy "${device}": "nat" needs "connect" to be the static ${key} address of one of the container's nics on a managed network`,
    );
  return {
    protocol: listen.kind,
    family: listen.family,
    listenAddress: listen.host,
    listenPorts: listen.ports,
    connectAddress: nic[key]!,
    connectPorts: connect.ports,
    bridge: nic.parent,
  };
}

export interface EnsureProxiesInput {
  proxy: ProxyAdapter | undefined;
  containerId: string;
  pid: number;
  devices: Devices;
  nics: readonly ResolvedNic[];
  /** The nat rules applied (JSON), from the live facts. */
  natKey: string | undefined;
  signal?: AbortSignal | undefined;
}

/** Converge; returns the nat rules now applied (JSON, '' for none) and the devices that have a forwarder. */
export async function ensureProxies(input: EnsureProxiesInput): Promise<{ natKey: string; forwarders: string[] }> {
  const { proxy, containerId, pid, signal } = input;
  const proxies = Object.entries(input.devices).filter(([, d]) => d.type === 'proxy');
  if (!proxy) {
    if (proxies.length)
      throw new TerminalError(
        `proxy "${proxies[0]![0]}": proxy devices are not available on this host (no forwarder configured)`,
      );
    return { natKey: input.natKey ?? '', forwarders: [] };
  }
  const forwarded = proxies.filter(([, d]) => !isTrue(d.nat));
  const wanted = new Set(forwarded.map(([n]) => n));
  for (const device of (await proxy.liveForwarders(containerId)).keys())
    if (!wanted.has(device)) await proxy.stopForwarder(containerId, device);
  for (const [device, dev] of forwarded) {
    try {
      await proxy.ensureForwarder(forwarderSpecOf(containerId, device, dev, pid), signal);
    } catch (e) {
      throw new TerminalError(`proxy "${device}": ${terminalMessageOf(e)}`, { cause: e });
    }
  }
  const rules = proxies.filter(([, d]) => isTrue(d.nat)).map(([n, d]) => natRuleOf(n, d, input.nics));
  const natKey = rules.length ? JSON.stringify(rules) : '';
  if (natKey !== (input.natKey ?? '')) {
    try {
      await proxy.applyNat(containerId, rules, signal);
    } catch (e) {
      throw new TerminalError(
        `proxy "${proxies.find(([, d]) => isTrue(d.nat))?.[0] ?? 'nat'}": cannot set its nat rules: ${terminalMessageOf(e)}`,
        { cause: e },
      );
    }
  }
  return { natKey, forwarders: [...wanted] };
}

/** The container stopped or is deleted: its forwarders stopped, its nat rules removed. */
export async function releaseProxies(
  proxy: ProxyAdapter | undefined,
  containerId: string,
  natKey: string | undefined,
  signal?: AbortSignal,
): Promise<void> {
  if (!proxy) return;
  for (const device of (await proxy.liveForwarders(containerId)).keys()) await proxy.stopForwarder(containerId, device);
  if (natKey) await proxy.applyNat(containerId, [], signal);
}
