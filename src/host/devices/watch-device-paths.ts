import { existsSync, watch, type FSWatcher } from 'node:fs';
import path from 'node:path';

/**
 * Host device paths watched per owner (a container id): the owner is told when one appears or goes. A path
 * ending in `/` is a directory whose every entry is watched (USB nodes: /dev/bus/usb/BBB/, names unknown
 * before the device is plugged).
 */
export interface DevicePathWatcher {
  /** Replace what `key` watches (an empty list stops watching for it). */
  watch(key: string, paths: readonly string[]): void;
  close(): void;
}

export interface WatchDevicePathsDeps {
  /** Called once per burst of changes (debounced) with one of the key's paths that changed. */
  onChange(key: string, changed: string): void;
  debounceMs?: number;
  /** Injectable for tests; node's fs.watch (inotify) by default. */
  watchDir?: (dir: string, listener: (filename: string | null) => void) => FSWatcher;
}

/** Watching a directory's every entry: the name a watch carries for it. */
const ANY = '/';

/**
 * The nearest existing directory above `p`, and the name of the entry below it on the way to `p` (for a
 * `dir/` path: the directory itself with ANY once it exists).
 */
function anchorOf(p: string): { dir: string; name: string } {
  if (p.endsWith('/') && existsSync(p)) return { dir: path.resolve(p), name: ANY };
  let child = path.resolve(p);
  let dir = path.dirname(child);
  while (dir !== child && !existsSync(dir)) {
    child = dir;
    dir = path.dirname(dir);
  }
  return { dir, name: path.basename(child) };
}

const defaultWatchDir = (dir: string, listener: (filename: string | null) => void) =>
  watch(dir, { persistent: false }, (_ev, f) => listener(f === null ? null : String(f)));

/**
 * Watches host device paths with inotify (fs.watch on their directories; nothing is polled). A path whose
 * directory does not exist yet is watched through its nearest existing ancestor, and the watch moves down
 * as directories appear. One watcher per directory, shared by every key; changes of one key are
 * debounced, so a burst (udev creating a node, then chmod, symlinks) triggers one reconcile.
 */
export function watchDevicePaths(deps: WatchDevicePathsDeps): DevicePathWatcher {
  const debounceMs = deps.debounceMs ?? 100;
  const watchDir = deps.watchDir ?? defaultWatchDir;
  const wanted = new Map<string, string[]>();
  /** dir → its watcher and, per entry name, the keys and full paths interested in it. */
  const dirs = new Map<string, { w: FSWatcher; names: Map<string, Map<string, string>> }>();
  const timers = new Map<string, { t: NodeJS.Timeout; changed: string }>();
  let closed = false;

  const fire = (key: string, changed: string) => {
    if (timers.has(key) || closed) return;
    const t = setTimeout(() => {
      timers.delete(key);
      arm(key); // a directory may have appeared or gone: move the watches
      deps.onChange(key, changed);
    }, debounceMs);
    t.unref?.();
    timers.set(key, { t, changed });
  };

  const onEvent = (dir: string, filename: string | null) => {
    const entry = dirs.get(dir);
    if (!entry) return;
    for (const [name, keys] of entry.names)
      if (filename === null || filename === name || name === ANY) for (const [key, p] of keys) fire(key, p);
  };

  const disarm = (key: string) => {
    for (const [dir, entry] of dirs) {
      for (const [name, keys] of entry.names) {
        keys.delete(key);
        if (keys.size === 0) entry.names.delete(name);
      }
      if (entry.names.size === 0) {
        entry.w.close();
        dirs.delete(dir);
      }
    }
  };

  function arm(key: string) {
    disarm(key);
    for (const p of wanted.get(key) ?? []) {
      const { dir, name } = anchorOf(p);
      let entry = dirs.get(dir);
      if (!entry) {
        let w: FSWatcher;
        try {
          w = watchDir(dir, (f) => onEvent(dir, f));
        } catch {
          continue; // unreadable directory: nothing can be watched there
        }
        // The directory itself went (or the watch broke): every key on it looks again.
        w.on?.('error', () => onEvent(dir, null));
        entry = { w, names: new Map() };
        dirs.set(dir, entry);
      }
      const keys = entry.names.get(name) ?? new Map<string, string>();
      keys.set(key, p);
      entry.names.set(name, keys);
    }
  }

  return {
    watch(key, paths) {
      if (closed) return;
      const prev = wanted.get(key) ?? [];
      if (prev.length === paths.length && prev.every((p, i) => p === paths[i])) return;
      if (paths.length === 0) {
        wanted.delete(key);
        clearTimeout(timers.get(key)?.t);
        timers.delete(key);
      } else wanted.set(key, [...paths]);
      arm(key);
    },
    close() {
      closed = true;
      for (const { t } of timers.values()) clearTimeout(t);
      timers.clear();
      for (const { w } of dirs.values()) w.close();
      dirs.clear();
      wanted.clear();
    },
  };
}
