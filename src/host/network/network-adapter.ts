/**
 * The network reconciler's host (NetworkAdapter, reconcilers/adapters.ts): bridges, their ports,
 * routes and sysctls (converge-bridge.ts, converge-ports.ts), one detached dnsmasq per network
 * (dnsmasq-process.ts; restarted only when its config changed or it is gone), svcd's nft table
 * (nft-firewall.ts) and the DHCP host entries (dhcp-hosts.ts). Host state is read from /sys and /proc
 * first, so converging a network that is already right spawns nothing.
 */
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import type { NetworkAdapter } from '../../reconcilers/adapters.ts';
import { classifierOf } from '../command-failure.ts';
import { runCommand, type RunOptions } from '../exec.ts';
import { convergeBridge, deleteLinkIfPresent, readLinkFacts, type HostRoots } from './converge-bridge.ts';
import { convergePorts, removePorts } from './converge-ports.ts';
import { pruneDhcpHostFiles, writeDhcpHost } from './dhcp-hosts.ts';
import { createDnsmasqProcess } from './dnsmasq-process.ts';
import { tunnelInterfaceName } from './ip-args.ts';
import { createNftFirewall } from './nft-firewall.ts';
import { dnsmasqFiles, renderDnsmasqConf, wantsDnsmasq } from './render-dnsmasq-conf.ts';

export interface NetworkAdapterDeps {
  /** Default /proc. */
  procRoot?: string;
  /** Default /sys. */
  sysRoot?: string;
  /** Runs a host command (argv); default host/exec.ts runCommand. */
  run?: (file: string, args: readonly string[], opts?: RunOptions) => Promise<string>;
  /** Send a signal to a process (default process.kill). */
  kill?: (pid: number, signal: NodeJS.Signals) => void;
}

/** ip and nft failures that running again will not fix: the kernel lacks the type, the input is refused. */
const IP_FAILURE = classifierOf({
  terminal: [/Unknown device type|Invalid argument|not supported|Error: argument .* is wrong|Invalid "/i],
  fallback: 'transient',
});
const NFT_FAILURE = classifierOf({
  terminal: [/syntax error|Error: Could not process rule: (No such file or directory|Operation not supported)/i],
  fallback: 'transient',
});

export function createNetworkAdapter(deps: NetworkAdapterDeps = {}): NetworkAdapter {
  const roots: HostRoots = { procRoot: deps.procRoot ?? '/proc', sysRoot: deps.sysRoot ?? '/sys' };
  const run = deps.run ?? runCommand;
  const ip = (args: readonly string[]) => run('ip', args, { failure: IP_FAILURE, timeoutMs: 30_000 });
  const dnsmasq = createDnsmasqProcess({
    procRoot: roots.procRoot,
    run: (file, args) => run(file, args, { timeoutMs: 30_000 }),
    ...(deps.kill ? { kill: deps.kill } : {}),
  });
  const applyFirewall = createNftFirewall((args, input) =>
    run('nft', args, { failure: NFT_FAILURE, timeoutMs: 30_000, ...(input !== undefined ? { input } : {}) }),
  );

  /** Write dnsmasq.conf when it differs; true when it changed. */
  async function writeConf(dir: string, conf: string): Promise<boolean> {
    const file = dnsmasqFiles(dir).conf;
    if ((await readFile(file, 'utf8').catch(() => undefined)) === conf) return false;
    await writeFile(`${file}.tmp`, conf, { mode: 0o644 });
    await rename(`${file}.tmp`, file);
    return true;
  }

  return {
    async ensureNetwork(spec) {
      await mkdir(spec.dir, { recursive: true, mode: 0o755 });
      await mkdir(dnsmasqFiles(spec.dir).hostsDir, { recursive: true, mode: 0o755 });
      const remade = await convergeBridge(spec, roots, ip);
      await convergePorts(spec, roots, ip);
      if (!wantsDnsmasq(spec)) {
        // No address to serve (a plain L2 bridge) or nothing to serve on it: none runs, and the leases
        // of the one that did are gone with it (LXD removes them too).
        await dnsmasq.stop(spec.dir);
        for (const f of ['conf', 'leases'] as const) await rm(dnsmasqFiles(spec.dir)[f], { force: true });
        return;
      }
      const changed = await writeConf(spec.dir, renderDnsmasqConf(spec));
      if (changed || remade || (await dnsmasq.running(spec.dir)) === undefined) await dnsmasq.start(spec.dir);
    },

    async removeNetwork(name, dir) {
      await dnsmasq.stop(dir);
      await removePorts(dir, name, roots, ip);
      // routes through the bridge go with it
      await deleteLinkIfPresent(roots, ip, name);
      await rm(dir, { recursive: true, force: true });
    },

    applyFirewall,

    async health(spec) {
      const link = await readLinkFacts(roots, spec.name);
      if (!link) return `bridge ${spec.name} is missing`;
      if (!link.bridge) return `${spec.name} is not a bridge`;
      if (!link.up) return `bridge ${spec.name} is down`;
      if (wantsDnsmasq(spec) && (await dnsmasq.running(spec.dir)) === undefined)
        return `dnsmasq of network ${spec.name} is not running`;
      for (const t of spec.tunnels) {
        const name = tunnelInterfaceName(spec.name, t.name);
        const port = await readLinkFacts(roots, name);
        if (!port) return `tunnel ${name} of network ${spec.name} is missing`;
        if (port.master !== spec.name) return `tunnel ${name} is not on bridge ${spec.name}`;
      }
      // An external interface svcd did not make: only its place on the bridge is svcd's to repair.
      for (const name of spec.externalInterfaces) {
        const port = await readLinkFacts(roots, name);
        if (port && port.master !== spec.name) return `external interface ${name} is not on bridge ${spec.name}`;
      }
      return undefined;
    },

    async setDhcpHost(spec, key, entry) {
      if (await writeDhcpHost(spec.dir, key, entry)) await dnsmasq.reload(spec.dir);
    },

    async pruneDhcpHosts(spec, keep) {
      if (await pruneDhcpHostFiles(spec.dir, keep)) await dnsmasq.reload(spec.dir);
    },
  };
}
