/**
 * The layers' import rules, and no import cycles. Each layer may use the ones below it:
 * host (ground floor) ← desired ← reconcilers, observers ← api ← agent, cli. `src/util` is pure and
 * anyone's; types may cross where noted (a layer names the types it implements).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { listImports } from './test-support/list-imports.ts';

const SRC = path.dirname(fileURLToPath(import.meta.url));

/** Every non-test .ts file under `dir`, relative to src/. */
function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) {
      if (name === 'test-support' || name === 'component-suite') continue;
      out.push(...sourceFiles(full));
    } else if (name.endsWith('.ts') && !name.endsWith('.test.ts')) out.push(path.relative(SRC, full));
  }
  return out;
}

/** The top folder under src/ of a file (relative to src/), or its own name for top-level files. */
const layerOf = (rel: string) => rel.split(path.sep)[0]!.replace(/\.ts$/, '');

export interface LayerRule {
  /** The importing layer. */
  from: string;
  /** Layers it may not import values from. */
  noValues: string[];
  /** Layers it may not import even types from. */
  noTypes: string[];
  why: string;
  /** Files (relative to src/) of a forbidden layer it may still import values from. */
  allowValues?: readonly string[];
}

/**
 * The pure part of src/host that reconcilers and observers may import values from: paths under the state
 * dir, error classes (the adapters' contract: a reconciler tells a refused start from a transient failure),
 * and pure renderers and computations. Each does no I/O, which a test below checks: it imports no file,
 * process or network module and, of host, only files of this list.
 */
export const PURE_HOST: readonly string[] = [
  // every path under the state dir
  'host/layout.ts',
  // error classes
  'host/lxc/lxc-errors.ts',
  'host/storage/errors.ts',
  // the LXC config, its seccomp policy and idmap: pure renderers with golden tests
  'host/lxc/render-config.ts',
  'host/lxc/render-seccomp-policy.ts',
  'host/idmap/compute-idmap.ts',
  'host/idmap/render-idmap-lines.ts',
  // cgroup file names, the values of a container's limits, device rules
  'host/lxc/cgroup-files.ts',
  'host/lxc/cgroup-settings.ts',
  // how an init's end reads (the stop judge's rule)
  'host/lxc/init-exit.ts',
];

export const LAYER_RULES: LayerRule[] = [
  {
    from: 'host',
    noValues: ['desired', 'api', 'reconcilers', 'observers', 'agent', 'cli'],
    // the adapters it implements: reconcilers/adapters.ts, observers/adapters.ts
    noTypes: ['agent', 'cli'],
    why: 'host is the ground floor: it knows no domain, HTTP or reconcile code (it may name the types it implements)',
  },
  {
    from: 'desired',
    noValues: ['api', 'reconcilers', 'observers', 'agent', 'cli'],
    noTypes: ['api', 'reconcilers', 'observers', 'agent', 'cli'],
    why: 'desired state knows nothing of HTTP or of who converges it',
  },
  {
    from: 'reconcilers',
    noValues: ['host', 'api', 'observers', 'agent', 'cli'],
    noTypes: ['api', 'agent', 'cli'],
    allowValues: PURE_HOST,
    why: 'reconcilers are given their inputs (the host through reconcilers/adapters.ts); they never call the API or the observers',
  },
  {
    from: 'observers',
    noValues: ['host', 'api', 'agent', 'cli'],
    noTypes: ['api', 'agent', 'cli'],
    allowValues: PURE_HOST,
    why: 'observers feed runtime state back, reading the host through observers/adapters.ts; they never call the API',
  },
  {
    from: 'util',
    noValues: ['host', 'desired', 'api', 'reconcilers', 'observers', 'db', 'agent', 'cli'],
    noTypes: ['host', 'desired', 'api', 'reconcilers', 'observers', 'agent', 'cli'],
    why: 'util holds pure helpers any layer may import',
  },
];

/** `file: import (why)` for every import that breaks a rule (pure over the given sources). */
export function layerViolations(files: Map<string, string>, rules: LayerRule[] = LAYER_RULES): string[] {
  const out: string[] = [];
  for (const [rel, code] of files) {
    const rule = rules.find((r) => r.from === layerOf(rel));
    if (!rule) continue;
    for (const imp of listImports(code)) {
      if (!imp.source.startsWith('.')) continue;
      const target = path.normalize(path.join(path.dirname(rel), imp.source));
      const to = layerOf(target);
      if (to === rule.from) continue;
      if (!imp.typeOnly && rule.allowValues?.includes(target)) continue;
      if ((imp.typeOnly ? rule.noTypes : rule.noValues).includes(to)) out.push(`${rel}: ${imp.text} (${rule.why})`);
    }
  }
  return out;
}

/** Every import cycle among the files, each once, as the files in order (pure over the given sources). */
export function importCycles(files: Map<string, string>): string[][] {
  const edges = new Map<string, string[]>();
  for (const [rel, code] of files) {
    const to = listImports(code)
      .filter((i) => i.source.startsWith('.') && i.source.endsWith('.ts'))
      .map((i) => path.normalize(path.join(path.dirname(rel), i.source)))
      .filter((t) => files.has(t));
    edges.set(rel, [...new Set(to)]);
  }
  const cycles: string[][] = [];
  const seen = new Set<string>();
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (f: string) => {
    state.set(f, 'open');
    stack.push(f);
    for (const t of edges.get(f) ?? []) {
      if (state.get(t) === 'open') {
        const cycle = stack.slice(stack.indexOf(t));
        const key = [...cycle].sort().join('|');
        if (!seen.has(key)) {
          seen.add(key);
          cycles.push(cycle);
        }
      } else if (!state.has(t)) visit(t);
    }
    stack.pop();
    state.set(f, 'done');
  };
  for (const f of [...files.keys()].sort()) if (!state.has(f)) visit(f);
  return cycles;
}

const readAll = () => new Map(sourceFiles(SRC).map((rel) => [rel, readFileSync(path.join(SRC, rel), 'utf8')]));

test('the layer rules catch a violation', () => {
  const files = new Map([
    [
      'host/a.ts',
      "import { ValidationError } from '../desired/errors.ts';\nimport type { Row } from '../desired/schema/index.ts';",
    ],
    ['desired/b.ts', "import type { AppEnv } from '../api/context.ts';"],
    ['reconcilers/c.ts', "import { thing } from '../util/x.ts';"],
  ]);
  const v = layerViolations(files);
  assert.equal(v.length, 2, v.join('\n'));
  assert.match(v[0]!, /^host\/a\.ts: import \{ ValidationError \}/);
  assert.match(v[1]!, /^desired\/b\.ts: import type \{ AppEnv \}/);
});

test('reconcilers and observers reach the host only through adapters: a value import of host code is caught', () => {
  const files = new Map([
    ['reconcilers/container/a.ts', "import { writeInRoot } from '../../host/templates/write-in-root.ts';"],
    ['reconcilers/container/b.ts', "import type { LxcNic } from '../../host/lxc/types.ts';"],
    ['reconcilers/container/c.ts', "import { lxcPathOf } from '../../host/layout.ts';"],
    ['observers/d.ts', "import { readCgroupStats } from '../host/lxc/cgroup-stats.ts';"],
  ]);
  const v = layerViolations(files);
  assert.equal(v.length, 2, v.join('\n'));
  assert.match(v[0]!, /^reconcilers\/container\/a\.ts: import \{ writeInRoot \}/);
  assert.match(v[1]!, /^observers\/d\.ts: import \{ readCgroupStats \}/);
});

/** I/O modules: a file that imports one is not pure. */
const IO_MODULES = /^(node:)?(fs|fs\/promises|child_process|net|dgram|worker_threads|http|https)$|^execa$/;

/** Why each PURE_HOST file is not pure (it imports an I/O module, or host code outside the list), if any. */
export function impureHostFiles(files: Map<string, string>): string[] {
  const out: string[] = [];
  for (const rel of PURE_HOST) {
    const code = files.get(rel);
    if (code === undefined) {
      out.push(`${rel}: no such file`);
      continue;
    }
    for (const imp of listImports(code)) {
      if (imp.typeOnly) continue;
      if (IO_MODULES.test(imp.source)) out.push(`${rel}: ${imp.text}`);
      if (!imp.source.startsWith('.')) continue;
      const target = path.normalize(path.join(path.dirname(rel), imp.source));
      if (layerOf(target) === 'host' && !PURE_HOST.includes(target)) out.push(`${rel}: ${imp.text}`);
    }
  }
  return out;
}

test('the pure host list catches a file that does I/O', () => {
  const files = readAll();
  files.set('host/layout.ts', "import { readFile } from 'node:fs/promises';\nimport path from 'node:path';");
  files.set('host/lxc/init-exit.ts', "import { runCommand } from '../exec.ts';");
  assert.deepEqual(impureHostFiles(files), [
    "host/layout.ts: import { readFile } from 'node:fs/promises'",
    "host/lxc/init-exit.ts: import { runCommand } from '../exec.ts'",
  ]);
});

test('the host files reconcilers and observers may import values from do no I/O', () => {
  assert.deepEqual(impureHostFiles(readAll()), []);
});

test('reconcilers and observers import no file, process or network module', () => {
  const out: string[] = [];
  for (const [rel, code] of readAll()) {
    if (!['reconcilers', 'observers'].includes(layerOf(rel))) continue;
    for (const imp of listImports(code))
      if (!imp.typeOnly && IO_MODULES.test(imp.source)) out.push(`${rel}: ${imp.text}`);
  }
  assert.deepEqual(out, []);
});

test('the cycle finder finds a cycle, type imports included', () => {
  const files = new Map([
    ['observers/a.ts', "import { b } from './b.ts';"],
    ['observers/b.ts', "import type { A } from './a.ts';"],
    ['observers/c.ts', "import { b } from './b.ts';"],
  ]);
  assert.deepEqual(importCycles(files), [['observers/a.ts', 'observers/b.ts']]);
});

test('src/ keeps the layer rules', () => {
  assert.deepEqual(layerViolations(readAll()), []);
});

test('src/ has no import cycles', () => {
  assert.deepEqual(
    importCycles(readAll()).map((c) => c.join(' → ')),
    [],
  );
});
