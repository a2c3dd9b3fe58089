/** The real ProxyAdapter of the agent: svcd-proxy forwarders under `stateDir`, nat rules through `nft`. */
import type { ProxyAdapter } from '../../reconcilers/adapters.ts';
import { runCommand } from '../exec.ts';
import { proxyNatMarkerDirOf } from '../layout.ts';
import { createProxyAdapter } from './proxy-adapter.ts';
import { createProxyNat } from './proxy-nat.ts';

export function createHostProxyAdapter(deps: { stateDir: string }): ProxyAdapter {
  const applyNat = createProxyNat({ markerDir: proxyNatMarkerDirOf(deps.stateDir), runNft: (args, input, signal) => runCommand('nft', args, { input, timeoutMs: 30_000, ...(signal ? { signal } : {}) }) });
  return createProxyAdapter({ stateDir: deps.stateDir, applyNat });
}
