/**
 * Render an image template (LXD's pongo2 syntax is Django/Jinja-like; nunjucks reads the common
 * part: `{{ container.name }}`, `{% if %}`, `{% for %}`, filters, `config_get("k", "default")`).
 *
 * Templates come from images, i.e. from anyone, and svcd runs as root, so rendering is contained:
 * - nunjucks is not a sandbox (`{{ range.constructor("...")() }}` runs any JavaScript), so member
 *   and name lookups are restricted to own properties of plain data, never functions' members or
 *   Object.prototype names: the only callables a template reaches are nunjucks' globals, filters
 *   and config_get.
 * - Each render runs in its own node process (not a worker thread: a worker running out of memory
 *   can abort the whole of svcd) with a small heap, no environment, a deadline and, when svcd is
 *   root, as nobody: a template that loops or allocates without end is stopped without harm.
 * - There is no template loader: `{% include %}`/`{% extends %}` fail instead of reading files.
 */
import { createRequire } from 'node:module';
import { type HostCommandError, runCommand } from '../exec.ts';

/** What a template sees (LXD's context). */
export interface TemplateContext {
  trigger: string;
  path: string;
  container: { name: string; architecture: string; privileged: string; ephemeral: string };
  config: Record<string, string>;
  devices: Record<string, Record<string, string>>;
  properties: Record<string, string>;
}

export const MAX_RENDERED_BYTES = 16 * 1024 * 1024;

/** The renderer, run by a separate node process: reads {source, context, ...} as JSON on stdin, writes {output} or {error}. */
const RENDERER_SOURCE = `
'use strict';
const chunks = [];
process.stdin.on('data', (c) => chunks.push(c));
process.stdin.on('end', () => {
  const job = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  const nunjucks = require(job.nunjucksPath);
  // nunjucks is loaded (svcd's install may sit where nobody cannot read, e.g. under /root): only now
  // become nobody, before anything of the template is looked at.
  if (job.dropTo !== undefined) {
    process.setgroups([]);
    process.setgid(job.dropTo);
    process.setuid(job.dropTo);
  }
  const rt = nunjucks.runtime;
  const own = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
  const denied = (k) => k in Object.prototype || k === 'prototype' || k === '__proto__';
  rt.memberLookup = function (obj, val) {
    if (obj === undefined || obj === null) return undefined;
    const key = String(val);
    if (denied(key)) return undefined;
    if (typeof obj === 'string') return key === 'length' || /^\\d+$/.test(key) ? obj[key] : undefined;
    if (typeof obj !== 'object' || !own(obj, key)) return undefined;
    const v = obj[key];
    if (typeof v === 'function') return function (...args) { return v.apply(obj, args); };
    return v;
  };
  const lookup = rt.contextOrFrameLookup;
  rt.contextOrFrameLookup = function (context, frame, name) {
    return denied(String(name)) ? undefined : lookup(context, frame, name);
  };
  let answer;
  try {
    const env = new nunjucks.Environment([], { autoescape: false });
    const ctx = job.context;
    const config = ctx.config;
    ctx.instance = ctx.container;
    ctx.config_get = (key, dflt) => (own(config, String(key)) ? String(config[key]).replace(/[\\r\\n]+$/, '') : dflt);
    const output = env.renderString(job.source, ctx);
    if (Buffer.byteLength(output) > job.maxBytes) throw new Error('the rendered template is larger than ' + job.maxBytes + ' bytes');
    answer = { output };
  } catch (e) {
    answer = { error: String(e && e.message ? e.message : e) };
  }
  process.stdout.write(JSON.stringify(answer));
});
`;

const nunjucksPath = createRequire(import.meta.url).resolve('nunjucks');
const NOBODY = 65534;

/**
 * Render `source` with `context` in a separate node process (64 MiB heap, a deadline, an empty
 * environment, as nobody when svcd is root); rejects with the template's error, on timeout, or
 * when the renderer dies (out of memory).
 */
/**
 * The common case rendered in-process: text with only plain `{{ name.name... }}` substitutions (LXD's
 * hostname and hosts templates) and nothing nunjucks would treat specially. Lookups follow own
 * properties only; the value must be a string, number or boolean (missing → empty, as nunjucks prints
 * undefined). Anything else (tags, filters, comments, whitespace control, other values) → undefined:
 * the sandboxed renderer decides.
 */
export function renderPlainSubstitutions(source: string, context: TemplateContext): string | undefined {
  if (source.includes('{%') || source.includes('{#')) return undefined;
  let failed = false;
  const out = source.replace(/\{\{([^{}]*)\}\}/g, (_m, expr: string) => {
    const path = expr.trim();
    if (!/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/.test(path)) {
      failed = true;
      return '';
    }
    const root: Record<string, unknown> = { ...context, instance: context.container };
    let v: unknown = root;
    for (const key of path.split('.')) {
      if (v === undefined) break;
      // a member of a string, a number, ... is nunjucks' business
      if (v === null || typeof v !== 'object') {
        failed = true;
        return '';
      }
      v = Object.hasOwn(v, key) ? (v as Record<string, unknown>)[key] : undefined;
    }
    if (v === undefined || v === null) return '';
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return String(v);
    failed = true;
    return '';
  });
  // a brace pair left over is syntax the plain path does not know
  if (failed || out.includes('{{') || out.includes('}}') || out.length > MAX_RENDERED_BYTES) return undefined;
  return out;
}

export async function renderTemplate(
  source: string,
  context: TemplateContext,
  opts: { timeoutMs?: number } = {},
): Promise<string> {
  const plain = renderPlainSubstitutions(source, context);
  if (plain !== undefined) return plain;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  // As root the renderer drops to nobody itself, once nunjucks is loaded.
  const dropTo = process.getuid?.() === 0 ? NOBODY : undefined;
  let out: string;
  try {
    out = await runCommand(process.execPath, ['--max-old-space-size=64', '--stack-size=2000', '-e', RENDERER_SOURCE], {
      input: JSON.stringify({ nunjucksPath, source, context, maxBytes: MAX_RENDERED_BYTES, dropTo }),
      env: {},
      extendEnv: false,
      timeoutMs,
    });
  } catch (e) {
    const err = e as HostCommandError;
    if (/timed out/.test(err.message)) throw new Error(`rendering took longer than ${timeoutMs} ms`);
    throw new Error(
      /heap out of memory|Allocation failed/.test(err.stderr ?? '')
        ? 'rendering used too much memory'
        : `the template renderer failed: ${(err.stderr || err.message).split('\n')[0]}`,
    );
  }
  const answer = JSON.parse(out) as { output?: string; error?: string };
  if (answer.error !== undefined) throw new Error(answer.error);
  return answer.output ?? '';
}
