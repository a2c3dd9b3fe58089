import { randomInt } from 'node:crypto';
import { ValidationError } from './errors.ts';
import { overlaps, parseCidr, subnetText, type Cidr, type Family } from '../util/ip-cidr.ts';
import { familyCidr } from './network-config.ts';

/**
 * A bridge's subnets: `auto` replaced by a free private subnet, and a given one refused when it
 * overlaps another network or something the host already routes. Pure but for the random pick.
 */

/** Another managed network, as its stored config has it. */
export interface OtherNetwork {
  name: string;
  config: Record<string, string>;
}

const FAMILIES: Family[] = [4, 6];
const ATTEMPTS = 500;

/** The subnets a network's config occupies on one family: its own, then its routes. */
function subnetsOf(config: Record<string, string>, family: Family): Cidr[] {
  const own = familyCidr(config, family);
  const routes = (config[`ipv${family}.routes`] ?? '')
    .split(',')
    .map((r) => parseCidr(r.trim()))
    .filter((c): c is Cidr => c?.family === family);
  return own ? [own, ...routes] : routes;
}

/** `inner` lies wholly inside `outer`. */
const within = (inner: Cidr, outer: Cidr) =>
  inner.family === outer.family && outer.network <= inner.network && inner.last <= outer.last;

/**
 * The host's subnets that no managed network explains: the host lists svcd's own bridges, their
 * addresses (a /32 while a bridge is down) and routes too (`all` is every managed network, the one
 * being changed included). Default routes (prefix 0) are no subnet anyone takes.
 */
function foreignHostSubnets(hostSubnets: string[], all: OtherNetwork[]): Cidr[] {
  const managed = all.flatMap((n) => FAMILIES.flatMap((f) => subnetsOf(n.config, f)));
  return hostSubnets
    .map((s) => parseCidr(s))
    .filter((c): c is Cidr => !!c && c.prefix > 0 && !managed.some((m) => within(c, m)));
}

function randomCidr(family: Family): string {
  const hex = () => randomInt(0, 0x10000).toString(16);
  return family === 4 ? `10.${randomInt(0, 256)}.${randomInt(0, 256)}.1/24` : `fd42:${hex()}:${hex()}:${hex()}::1/64`;
}

/**
 * Resolve `auto` on both families and refuse subnets taken by another network (`others`: every
 * managed network but this one) or by the host (`hostSubnets`, of which the subnets of `all` managed
 * networks are svcd's own). Returns the config to store.
 */
export function resolveNetworkAddresses(
  config: Record<string, string>,
  others: OtherNetwork[],
  all: OtherNetwork[],
  hostSubnets: string[],
): Record<string, string> {
  const out = { ...config };
  const host = foreignHostSubnets(hostSubnets, all);
  const taken = others.flatMap((n) =>
    FAMILIES.flatMap((f) => subnetsOf(n.config, f).map((c) => ({ c, by: `network "${n.name}" (${subnetText(c)})` }))),
  );
  const conflict = (c: Cidr): string | undefined => {
    const t = taken.find((t) => overlaps(c, t.c));
    if (t) return t.by;
    const h = host.find((h) => overlaps(c, h));
    return h && `the host's subnet ${subnetText(h)}`;
  };
  const refuse = (key: string, c: Cidr) => {
    const by = conflict(c);
    if (by) throw new ValidationError(`Invalid value for network config key "${key}": ${subnetText(c)} overlaps ${by}`);
  };
  for (const f of FAMILIES) {
    const key = `ipv${f}.address`;
    if (out[key] === 'auto') {
      let pick: string | undefined;
      for (let i = 0; i < ATTEMPTS && !pick; i++) {
        const cand = randomCidr(f);
        if (!conflict(parseCidr(cand)!)) pick = cand;
      }
      if (!pick)
        throw new ValidationError(
          `Invalid value for network config key "${key}": no free IPv${f} subnet was found for "auto"; give one`,
        );
      out[key] = pick;
    }
    const own = familyCidr(out, f);
    if (own) refuse(key, own);
    for (const r of subnetsOf(out, f).slice(own ? 1 : 0)) refuse(`ipv${f}.routes`, r);
  }
  return out;
}
