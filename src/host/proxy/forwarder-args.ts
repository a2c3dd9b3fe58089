/**
 * The argv of `svcd-proxy` (src/host/native/svcd-proxy.c) for one forwarder, and the key that names
 * exactly that argv (kept in the pid file: a forwarder runs "with this spec" when the keys match). Pure.
 */
import { createHash } from 'node:crypto';
import type { ForwarderSpec } from './types.ts';
import { inPackage } from '../../util/package-root.ts';

/** The binary: `.build/svcd-proxy` at the top of the checkout (SVCD_PROXY overrides it, for packagers). */
export function forwarderBinary(env: NodeJS.ProcessEnv = process.env): string {
  return env.SVCD_PROXY ?? inPackage('.build/svcd-proxy');
}

/** svcd-proxy's arguments for `spec` (the options it leaves out are absent, never empty). */
export function forwarderArgs(spec: ForwarderSpec): string[] {
  const args = [
    '--listen-ns',
    String(spec.listenNs),
    '--listen',
    spec.listen,
    '--connect-ns',
    String(spec.connectNs),
    '--connect',
    spec.connect,
  ];
  const opt = (flag: string, v: number | string | undefined) => (v === undefined ? [] : [flag, String(v)]);
  args.push(
    ...opt('--listen-uid', spec.listenUid),
    ...opt('--listen-gid', spec.listenGid),
    ...opt('--listen-mode', spec.listenMode),
  );
  args.push(...opt('--drop-uid', spec.dropUid), ...opt('--drop-gid', spec.dropGid));
  if (spec.proxyProtocol) args.push('--proxy-protocol');
  if (spec.exitWith > 0) args.push('--exit-with', String(spec.exitWith));
  return args;
}

/** The key of an argv: a hash of it (a process whose cmdline hashes alike runs this very spec). */
export const argsKey = (args: readonly string[]): string =>
  createHash('sha256').update(JSON.stringify(args)).digest('hex').slice(0, 32);

/** The key of a spec. */
export const forwarderKey = (spec: ForwarderSpec): string => argsKey(forwarderArgs(spec));

/** The value of `flag` in an argv (`--listen` → `unix:/run/x`), or undefined. */
export function argValue(args: readonly string[], flag: string): string | undefined {
  const i = args.indexOf(flag);
  return i >= 0 ? args[i + 1] : undefined;
}
