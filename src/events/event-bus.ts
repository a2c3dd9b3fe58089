export const EVENT_TYPES = ['operation', 'logging', 'lifecycle'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface SvcEvent {
  type: EventType;
  timestamp: string;
  metadata: Record<string, unknown>;
  /** Project the event belongs to; absent for server-wide events (logging, certificates). */
  project?: string;
  location: string;
}

export interface EventFilter {
  types: ReadonlySet<EventType>;
  /** Only this project's events (plus server-wide ones); undefined = all projects. */
  project?: string | undefined;
}

export type EventListener = (e: SvcEvent) => void;

export interface EventBus {
  /** `location`: only for an event relayed from another cluster member (default: this member). */
  publish(e: Omit<SvcEvent, 'timestamp' | 'location'> & { timestamp?: string; location?: string }): void;
  subscribe(filter: EventFilter, fn: EventListener): () => void;
  listenerCount(): number;
}

/**
 * In-process fan-out. Delivery is synchronous and in publish order, so each subscriber sees
 * events in the order they happened; a listener that throws is dropped, never the publisher.
 */
export function createEventBus(opts: { location: string; now?: () => Date }): EventBus {
  const listeners = new Map<EventListener, EventFilter>();
  const now = opts.now ?? (() => new Date());
  return {
    publish(e) {
      const event: SvcEvent = {
        ...e,
        timestamp: e.timestamp ?? now().toISOString(),
        location: e.location ?? opts.location,
      };
      for (const [fn, f] of [...listeners]) {
        if (!f.types.has(event.type)) continue;
        if (f.project !== undefined && event.project !== undefined && event.project !== f.project) continue;
        try {
          fn(event);
        } catch {
          listeners.delete(fn);
        }
      }
    },
    subscribe(filter, fn) {
      listeners.set(fn, filter);
      return () => void listeners.delete(fn);
    },
    listenerCount: () => listeners.size,
  };
}
