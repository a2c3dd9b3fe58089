import type { Context } from 'hono';
import * as v from 'valibot';
import { readContainer } from '../../desired/containers.ts';
import { cachedProject } from '../../desired/cached-reads.ts';
import { profileProjectOf } from '../../desired/projects.ts';
import type { ContainerRow } from '../../desired/schema/index.ts';
import { deviceMap, optionalString, stringMap } from '../body.ts';
import type { AppEnv } from '../context.ts';
import { MigrationTarget } from '../migration-bodies.ts';
import type { ApiDeps } from '../deps.ts';
import { containerResources } from '../instance-collection.ts';
import { param } from '../router.ts';

/** Request bodies of the container routes, and what the routes share. */
export const Source = v.object({
  type: v.string('expected a string'),
  alias: optionalString,
  fingerprint: optionalString,
  properties: v.optional(stringMap),
  mode: optionalString,
  source: optionalString,
  server: optionalString,
  protocol: optionalString,
  secret: optionalString,
  certificate: optionalString,
  container_only: v.optional(v.boolean('expected a boolean')),
  // migration (type migration): the other server's operation and its secrets
  operation: optionalString,
  secrets: v.optional(stringMap),
  live: v.optional(v.boolean('expected a boolean')),
  instance_only: v.optional(v.boolean('expected a boolean')),
  'base-image': optionalString,
  refresh: v.optional(v.boolean('expected a boolean')),
  allow_inconsistent: v.optional(v.boolean('expected a boolean')),
});
/** The fields a client edits, at create and by PUT/PATCH. */
export const editableFields = {
  description: optionalString,
  architecture: optionalString,
  ephemeral: v.optional(v.boolean('expected a boolean')),
  profiles: v.optional(v.array(v.string('expected a string'), 'expected a list of profile names')),
  config: v.optional(stringMap),
  devices: v.optional(deviceMap),
};
export const CreateBody = v.object({
  name: v.string('expected a string'),
  ...editableFields,
  // The instance's kind (LXD 4's instances API); `instance_type` is the named size expanded to limits.
  type: optionalString,
  instance_type: optionalString,
  source: v.optional(Source),
});
export const PutBody = v.object({ ...editableFields, restore: optionalString });
export const RenameBody = v.object({
  name: v.optional(v.string('expected a string'), ''),
  migration: v.optional(v.boolean('expected a boolean')),
  // migration: true (the source role); `target` is push mode, the sink's operation that svcd dials
  live: v.optional(v.boolean('expected a boolean')),
  container_only: v.optional(v.boolean('expected a boolean')),
  instance_only: v.optional(v.boolean('expected a boolean')),
  allow_inconsistent: v.optional(v.boolean('expected a boolean')),
  target: MigrationTarget,
});
export const StateBody = v.object({
  action: v.picklist(
    ['start', 'stop', 'restart', 'freeze', 'unfreeze'],
    'expected one of start, stop, restart, freeze, unfreeze',
  ),
  timeout: v.optional(v.pipe(v.number('expected a number'), v.integer('expected an integer')), -1),
  force: v.optional(v.boolean('expected a boolean'), false),
  stateful: v.optional(v.boolean('expected a boolean'), false),
});

export const STATE_VERB = {
  start: 'Starting',
  stop: 'Stopping',
  restart: 'Restarting',
  freeze: 'Freezing',
  unfreeze: 'Unfreezing',
} as const;

export const editable = (c: ContainerRow) => ({
  description: c.description,
  architecture: c.architecture,
  ephemeral: c.ephemeral,
  profiles: c.profiles,
  config: c.config,
  devices: c.devices,
});

/** What the container route files share: the project's profile project, the container a path names, an operation's spec. */
export function createContainerRouteContext(deps: ApiDeps) {
  const { db } = deps;
  return {
    profileProject: async (c: Context<AppEnv>) => profileProjectOf(await cachedProject(db, c.get('project'))),
    one: async (c: Context<AppEnv>) => readContainer(db, c.get('project'), param(c, 'name')),
    op: (c: Context<AppEnv>, ct: ContainerRow, description: string) => ({
      class: 'task' as const,
      description,
      project: ct.project,
      resources: containerResources(c, ct),
    }),
  };
}
export type ContainerRouteContext = ReturnType<typeof createContainerRouteContext>;
