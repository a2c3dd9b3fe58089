/** The real ProxyAdapter of the agent: svcd-proxy forwarders under `stateDir` (started by its launcher), nat rules through `nft`. */
import type { ProxyAdapter } from '../../reconcilers/adapters.ts';
import { runCommand } from '../exec.ts';
import { proxyNatMarkerDirOf } from '../layout.ts';
import { forwarderBinary } from './forwarder-args.ts';
import { createForwarderLauncher } from './forwarder-launcher.ts';
import { createProxyAdapter } from './proxy-adapter.ts';
import { createProxyNat } from './proxy-nat.ts';

export function createHostProxyAdapter(deps: { stateDir: string }): ProxyAdapter {
  const applyNat = createProxyNat({
    markerDir: proxyNatMarkerDirOf(deps.stateDir),
    runNft: (args, input, signal) =>
      runCommand('nft', args, { input, timeoutMs: 30_000, ...(signal ? { signal } : {}) }),
  });
  const launcher = createForwarderLauncher({ stateDir: deps.stateDir, binary: forwarderBinary() });
  return createProxyAdapter({ stateDir: deps.stateDir, applyNat, launcher });
}
