import type { Hono } from 'hono';
import { bumpContainer, CONTAINER_KIND } from '../../desired/containers.ts';
import { ValidationError } from '../../desired/errors.ts';
import { powerFor, readObservedState, refusedPowerAction } from '../../desired/power-actions.ts';
import { readJson } from '../body.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { writeWithOperation } from '../desired-write.ts';
import { refusedOperation } from '../refused-operation.ts';
import { async, sync } from '../envelope.ts';
import { instanceRoute } from '../instance-collection.ts';
import { renderContainers } from './containers-render.ts';
import { StateBody, STATE_VERB, type ContainerRouteContext } from './container-bodies.ts';

/** `/1.0/containers/<name>/state`: what the observers saw, and power actions as desired power. */
export function registerContainerStateRoutes(app: Hono<AppEnv>, deps: ApiDeps, ctx: ContainerRouteContext): void {
  const { db } = deps;
  const { one, profileProject, op } = ctx;
  instanceRoute(app, '/:name/state', {
    GET: async (c) => {
      const cur = await one(c);
      const [r] = await renderContainers(db, await profileProject(c), [cur]);
      return sync(c, await deps.containers.state(cur, r!.runtime));
    },
    PUT: async (c) => {
      const cur = await one(c);
      const body = await readJson(c, StateBody);
      if (body.stateful)
        throw new ValidationError(
          'Stateful stop/start needs CRIU, which is not available on this host (criu check fails)',
        );
      const description = `${STATE_VERB[body.action]} container`;
      // Judged now, against the desired power and what the observer last saw (see power-actions.ts).
      const refused = refusedPowerAction(body.action, cur.power, await readObservedState(db, cur.id));
      if (refused) return async(c, await refusedOperation(deps, op(c, cur, description), refused));
      const operation = await writeWithOperation(deps, async (tx) => {
        const seq = (cur.powerRequest?.seq ?? 0) + 1;
        const row = await bumpContainer(tx, cur.id, {
          power: powerFor(body.action),
          powerRequest: { action: body.action, force: body.force, timeout: body.timeout, seq },
        });
        return {
          operation: op(c, row, description),
          target: { kind: CONTAINER_KIND, key: row.id, generation: row.generation },
        };
      });
      return async(c, operation);
    },
  });
}
