import type { EventBus } from './event-bus.ts';

export interface LifecycleInput {
  /** e.g. `profile-created`, `container-started`. */
  action: string;
  /** The resource URL, e.g. `/1.0/profiles/web`. */
  source: string;
  project?: string | undefined;
  context?: Record<string, unknown>;
  requestor?: { username: string; protocol: string; address?: string } | undefined;
}

/** Publish a lifecycle event (extension event_lifecycle). */
export function emitLifecycle(bus: EventBus, e: LifecycleInput): void {
  bus.publish({
    type: 'lifecycle',
    project: e.project,
    metadata: {
      action: e.action,
      source: e.source,
      context: e.context ?? {},
      ...(e.requestor ? { requestor: e.requestor } : {}),
    },
  });
}
