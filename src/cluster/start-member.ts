import os from 'node:os';
import type { Db } from '../db/types.ts';
import type { Clock } from '../reconcilers/runtime/index.ts';
import { createHeartbeat } from './heartbeat.ts';
import { registerMember } from './members.ts';

/** This daemon as a member of its database: its row written (adopting what nobody holds when alone), heartbeats renewed. */
export async function startMember(deps: {
  db: Db;
  name: string;
  clock: Clock;
  log: { warn(o: object, m?: string): void; info(o: object, m?: string): void };
  heartbeatMs?: number;
}): Promise<{ stop(): void }> {
  const { adopted } = await registerMember(deps.db, { name: deps.name, architecture: os.machine() });
  if (adopted)
    deps.log.info(
      { member: deps.name, containers: adopted },
      'containers written before members existed are held by this member',
    );
  const heartbeat = createHeartbeat({
    db: deps.db,
    name: deps.name,
    clock: deps.clock,
    log: deps.log,
    ...(deps.heartbeatMs ? { intervalMs: deps.heartbeatMs } : {}),
  });
  heartbeat.start();
  return heartbeat;
}
