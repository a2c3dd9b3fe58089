/**
 * An interface's state and type from its flags word (/sys/class/net/<name>/flags, hex), as LXD derives
 * them for network and container state: `up` is the administrative state (IFF_UP), not the operstate
 * (a bridge without ports is up with no carrier); the type is broadcast, point-to-point or loopback by
 * IFF_BROADCAST, IFF_POINTOPOINT and IFF_LOOPBACK, `unknown` when none is set. Pure.
 */

const IFF_UP = 0x1;
const IFF_BROADCAST = 0x2;
const IFF_LOOPBACK = 0x8;
const IFF_POINTOPOINT = 0x10;

export interface LinkFlagsView {
  state: 'up' | 'down';
  type: 'loopback' | 'broadcast' | 'point-to-point' | 'unknown';
}

/** undefined when the text is not a flags word. */
export function parseLinkFlags(text: string): LinkFlagsView | undefined {
  const t = text.trim();
  if (!/^(0x)?[0-9a-f]+$/i.test(t)) return undefined;
  const flags = parseInt(t, 16);
  const type =
    flags & IFF_LOOPBACK
      ? 'loopback'
      : flags & IFF_POINTOPOINT
        ? 'point-to-point'
        : flags & IFF_BROADCAST
          ? 'broadcast'
          : 'unknown';
  return { state: flags & IFF_UP ? 'up' : 'down', type };
}
