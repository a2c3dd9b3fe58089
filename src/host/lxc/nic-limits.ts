/**
 * A nic's bandwidth limits with tc on its host-side veth: `limits.ingress` (traffic to the container =
 * leaving the host veth) shapes with an htb class on the veth's root qdisc; `limits.egress` (traffic from
 * the container = entering the host veth) is redirected from the veth's ingress qdisc to an ifb device of
 * its own (`ifb` + 8 hex digits of the veth's name) and shaped there with htb (this kernel has mirred but
 * no police action). Pure argv builders (golden tests) and one runner.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { HostCommandError, runCommand } from '../exec.ts';

export interface NicLimits {
  ingressBits?: number | undefined;
  egressBits?: number | undefined;
}

/** The ifb device that shapes a veth's incoming traffic. */
export const nicIfbOf = (dev: string) => `ifb${createHash('sha256').update(dev).digest('hex').slice(0, 8)}`;

const htb = (dev: string, bits: number) => [
  ['tc', 'qdisc', 'add', 'dev', dev, 'root', 'handle', '1:', 'htb', 'default', '10'],
  ['tc', 'class', 'add', 'dev', dev, 'parent', '1:', 'classid', '1:10', 'htb', 'rate', `${bits}bit`],
];

/**
 * What clears svcd's limits from a veth (each may be absent: its failure is ignored). `has` says what can be
 * there: the veth's qdiscs (not on a veth that is gone, or that its container's start has just made) and its
 * ifb device (not when the host has none of that name).
 */
export const clearNicLimitsCommands = (dev: string, has = { qdiscs: true, ifb: true }): string[][] => [
  ...(has.qdiscs
    ? [
        ['tc', 'qdisc', 'del', 'dev', dev, 'root'],
        ['tc', 'qdisc', 'del', 'dev', dev, 'ingress'],
      ]
    : []),
  ...(has.ifb ? [['ip', 'link', 'del', nicIfbOf(dev)]] : []),
];

/** Whether the host (svcd's network namespace) has an interface of that name: no process (a name is never a path). */
const hasLink = (dev: string) => /^[^/\0]+$/.test(dev) && existsSync(`/sys/class/net/${dev}`);

/** The commands (file first) that set the limits on a veth whose limits were cleared. */
export function nicLimitsCommands(dev: string, limits: NicLimits): string[][] {
  const out: string[][] = [];
  if (limits.ingressBits) out.push(...htb(dev, limits.ingressBits));
  if (limits.egressBits) {
    const ifb = nicIfbOf(dev);
    out.push(
      ['ip', 'link', 'add', ifb, 'type', 'ifb'],
      ['ip', 'link', 'set', ifb, 'up'],
      ...htb(ifb, limits.egressBits),
    );
    out.push(['tc', 'qdisc', 'add', 'dev', dev, 'handle', 'ffff:', 'ingress']);
    out.push([
      'tc',
      'filter',
      'add',
      'dev',
      dev,
      'parent',
      'ffff:',
      'protocol',
      'all',
      'u32',
      'match',
      'u32',
      '0',
      '0',
      'action',
      'mirred',
      'egress',
      'redirect',
      'dev',
      ifb,
    ]);
  }
  return out;
}

const absent = (e: unknown) =>
  e instanceof HostCommandError &&
  /No such file|Cannot find|Invalid handle|No qdisc|handle of zero|does not exist/i.test(e.stderr);

/**
 * Bring a veth's limits to `limits` (none: svcd's qdiscs and ifb go; a veth that is gone has none). `fresh`: the
 * veth was made by its container's start just now, so it has no qdisc of svcd's. What cannot be there is not
 * cleared: a container's start (and its stop) then runs no command for a nic without limits.
 */
export async function applyNicLimits(
  dev: string,
  limits: NicLimits,
  signal?: AbortSignal,
  fresh = false,
): Promise<void> {
  const opts = { timeoutMs: 30_000, ...(signal ? { signal } : {}) };
  const has = { qdiscs: !fresh && hasLink(dev), ifb: hasLink(nicIfbOf(dev)) };
  for (const [file, ...args] of clearNicLimitsCommands(dev, has))
    await runCommand(file!, args, opts).catch((e: unknown) => {
      if (!absent(e)) throw e;
    });
  for (const [file, ...args] of nicLimitsCommands(dev, limits)) await runCommand(file!, args, opts);
}
