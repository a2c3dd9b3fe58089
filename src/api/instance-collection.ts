import type { Context, Hono } from 'hono';
import { containerUrl } from '../desired/containers.ts';
import { ValidationError } from '../desired/errors.ts';
import type { AppEnv } from './context.ts';
import { route, type RouteSpec } from './router.ts';

/**
 * The container API is served twice: under `/1.0/containers` (the spec's paths) and under `/1.0/instances`
 * (LXD 4's name for the same objects, which newer clients speak once `instances` is announced). The same
 * handlers answer both; only the URLs they render follow the collection the request came through, as
 * LXD does: a list asked through /1.0/instances names /1.0/instances/<name>.
 */
export type InstanceCollection = 'containers' | 'instances';
const COLLECTIONS: readonly InstanceCollection[] = ['containers', 'instances'];

/** Register `spec` on `/1.0/containers<rest>` and `/1.0/instances<rest>`. */
export function instanceRoute(app: Hono<AppEnv>, rest: string, spec: RouteSpec): void {
  for (const collection of COLLECTIONS) route(app, `/1.0/${collection}${rest}`, spec);
}

/** The collection a container route was asked through. */
export function collectionOf(c: Context<AppEnv>): InstanceCollection {
  return c.req.path.startsWith('/1.0/instances') ? 'instances' : 'containers';
}

/** The container's URL in the request's collection. */
export function instanceUrl(c: Context<AppEnv>, ct: { name: string; project: string }): string {
  return containerUrl(ct, collectionOf(c));
}

/**
 * An operation's `resources` naming a container. Through /1.0/instances, LXD names it under both keys
 * (`containers` and `instances`, each with its own path); through /1.0/containers only `containers`, as before.
 */
export function containerResources(
  c: Context<AppEnv>,
  ct: { name: string; project: string },
): Record<string, string[]> {
  const containers = [containerUrl(ct)];
  return collectionOf(c) === 'instances' ? { containers, instances: [containerUrl(ct, 'instances')] } : { containers };
}

/**
 * `?instance-type=` on a list through /1.0/instances: whether containers are listed. Only containers exist
 * here, so `virtual-machine` lists nothing (as LXD without VMs); another value names no type.
 */
export function instanceTypeListed(value: string | undefined): boolean {
  if (value === undefined || value === '' || value === 'container') return true;
  if (value === 'virtual-machine') return false;
  throw new ValidationError(`Invalid "instance-type" "${value}": expected container or virtual-machine`);
}
