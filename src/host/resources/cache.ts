/**
 * Memoizing wrapper: the CPU part is treated as static and read once; memory
 * is re-read (only /proc/meminfo) once the cached value is ttlMs old.
 */
import type { CpuResources, MemoryResources, ServerResources } from './compute-resources.ts';
import { readMemoryResources, readResources as readAllResources } from './read-resources.ts';
import type { ReadResourcesOptions } from './read-resources.ts';

export interface ResourcesCacheOptions {
  /** Full read, used for the first fill (and after invalidate()). Default: readResources({ root }). */
  readResources?: (opts?: ReadResourcesOptions) => Promise<ServerResources>;
  /**
   * Memory-only refresh. Default: readMemoryResources({ root }) when
   * readResources is not injected, otherwise the memory part of readResources().
   */
  readMemory?: (opts?: ReadResourcesOptions) => Promise<MemoryResources>;
  /** Passed to the readers. */
  root?: string;
  /** Memory values at least this old (ms) are re-read. Default 1000. */
  ttlMs?: number;
  /** Clock in ms. Default performance.now(). */
  now?: () => number;
}

export interface ResourcesCache {
  /** Current resources; concurrent calls share one underlying read. Returns a fresh object each call. */
  get(): Promise<ServerResources>;
  /** Drop everything, so the next get() re-reads CPU and memory. */
  invalidate(): void;
}

interface State {
  cpu: CpuResources;
  memory: MemoryResources;
  memoryAt: number;
}

function copy(state: State): ServerResources {
  return {
    cpu: { sockets: state.cpu.sockets.map((s) => ({ ...s })), total: state.cpu.total },
    memory: { ...state.memory },
  };
}

export function createResourcesCache(options: ResourcesCacheOptions = {}): ResourcesCache {
  const readerOpts: ReadResourcesOptions = options.root === undefined ? {} : { root: options.root };
  const readAll = options.readResources ?? readAllResources;
  const readMemory =
    options.readMemory ??
    (options.readResources ? async (o?: ReadResourcesOptions) => (await readAll(o)).memory : readMemoryResources);
  const ttlMs = options.ttlMs ?? 1000;
  const now = options.now ?? (() => performance.now());

  let state: State | undefined;
  let generation = 0;
  let filling: Promise<State> | undefined;
  let refreshing: Promise<State> | undefined;

  function fill(): Promise<State> {
    if (filling) return filling;
    const gen = generation;
    const startedAt = now();
    const p = readAll(readerOpts).then((r) => {
      const s: State = { cpu: r.cpu, memory: r.memory, memoryAt: startedAt };
      if (gen === generation) state = s;
      return s;
    });
    filling = p;
    const clear = () => {
      if (filling === p) filling = undefined;
    };
    p.then(clear, clear);
    return p;
  }

  function refresh(current: State): Promise<State> {
    if (refreshing) return refreshing;
    const gen = generation;
    const startedAt = now();
    const p = readMemory(readerOpts).then((memory) => {
      const s: State = { cpu: current.cpu, memory, memoryAt: startedAt };
      if (gen === generation) state = s;
      return s;
    });
    refreshing = p;
    const clear = () => {
      if (refreshing === p) refreshing = undefined;
    };
    p.then(clear, clear);
    return p;
  }

  return {
    async get() {
      const current = state;
      if (!current) return copy(await fill());
      if (now() - current.memoryAt >= ttlMs) return copy(await refresh(current));
      return copy(current);
    },
    invalidate() {
      generation += 1;
      state = undefined;
      filling = undefined;
      refreshing = undefined;
    },
  };
}
