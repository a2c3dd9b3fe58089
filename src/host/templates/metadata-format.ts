/** The format of a container's metadata.yaml (LXD's): its types, and a reader that reports or drops what is invalid. */
/** When an image template is rendered (LXD's triggers). */
export const TEMPLATE_TRIGGERS = ['create', 'copy', 'start'] as const;
export type TemplateTrigger = (typeof TEMPLATE_TRIGGERS)[number];

export interface TemplateSpec {
  when: TemplateTrigger[];
  /** Only render when the target file does not exist yet. */
  create_only: boolean;
  /** File name in the container's templates/ directory. */
  template: string;
  properties: Record<string, string>;
}

/** A container's metadata.yaml (kept beside its rootfs), as the API shows it. */
export interface ContainerMetadata {
  architecture: string;
  creation_date: number;
  expiry_date: number;
  properties: Record<string, string>;
  /** Target path in the container → template. */
  templates: Record<string, TemplateSpec>;
}

/**
 * A template file name: one path component (LXD refuses `/`), not starting with `.` (so neither
 * `.` nor `..`, nor svcd's temporary files), no NUL, at most 255 bytes. Such a name cannot leave
 * the templates directory.
 */
export function isTemplateName(name: string): boolean {
  return name !== '' && !name.startsWith('.') && !/[/\0]/.test(name) && Buffer.byteLength(name) <= 255;
}

/** A template target: an absolute path without `..` components or NUL (it is resolved inside the rootfs anyway). */
export function isTemplateTarget(p: string): boolean {
  return (
    p.startsWith('/') && p !== '/' && !p.includes('\0') && !p.split('/').includes('..') && Buffer.byteLength(p) <= 4096
  );
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Problems are reported (strict: PUT bodies) or the offending part dropped (lenient: files from images). */
export type Report = (message: string) => void;

function stringMapOf(v: unknown, what: string, report: Report): Record<string, string> {
  if (v === undefined || v === null) return {};
  if (!isObject(v)) {
    report(`${what} must be a map of strings`);
    return {};
  }
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(v)) {
    if (typeof val === 'string') out[k] = val;
    else if (typeof val === 'number' || typeof val === 'boolean') out[k] = String(val);
    else if (val !== null) report(`${what} "${k}" must be a string`);
  }
  return out;
}

function integerOf(v: unknown, what: string, report: Report): number {
  if (v === undefined || v === null) return 0;
  const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
    report(`${what} must be a non-negative integer (seconds since the epoch)`);
    return 0;
  }
  return n;
}

function templateOf(target: string, v: unknown, report: Report): TemplateSpec | undefined {
  const where = `template for "${target}"`;
  if (!isTemplateTarget(target))
    return void report(
      `Invalid template target "${target}": an absolute path in the container without ".." is required`,
    );
  if (!isObject(v)) return void report(`The ${where} must be an object`);
  if (typeof v.template !== 'string' || v.template === '')
    return void report(`The ${where} needs a "template" (a file name in templates/)`);
  if (!isTemplateName(v.template))
    return void report(
      `Invalid template file name "${v.template}" for "${target}": one file name without "/", not starting with "." is required`,
    );
  const when: TemplateTrigger[] = [];
  if (v.when !== undefined && v.when !== null) {
    if (!Array.isArray(v.when)) return void report(`"when" of the ${where} must be a list of triggers`);
    for (const t of v.when) {
      if (!(TEMPLATE_TRIGGERS as readonly unknown[]).includes(t))
        return void report(
          `Invalid trigger ${JSON.stringify(t)} for "${target}": must be one of ${TEMPLATE_TRIGGERS.join(', ')}`,
        );
      if (!when.includes(t as TemplateTrigger)) when.push(t as TemplateTrigger);
    }
  }
  if (v.create_only !== undefined && v.create_only !== null && typeof v.create_only !== 'boolean')
    return void report(`"create_only" of the ${where} must be a boolean`);
  return {
    when,
    create_only: v.create_only === true,
    template: v.template,
    properties: stringMapOf(v.properties, `Property of the ${where}`, report),
  };
}

export function normalizeContainerMetadata(doc: unknown, report: Report): ContainerMetadata {
  if (doc === undefined || doc === null) doc = {};
  if (!isObject(doc)) {
    report('The metadata must be an object');
    doc = {};
  }
  const m = doc as Record<string, unknown>;
  if (m.architecture !== undefined && m.architecture !== null && typeof m.architecture !== 'string')
    report('"architecture" must be a string');
  const templates: Record<string, TemplateSpec> = {};
  if (m.templates !== undefined && m.templates !== null) {
    if (!isObject(m.templates)) report('"templates" must be a map of target path to template');
    else
      for (const [target, t] of Object.entries(m.templates)) {
        const spec = templateOf(target, t, report);
        if (spec) templates[target] = spec;
      }
  }
  return {
    architecture: typeof m.architecture === 'string' ? m.architecture : '',
    creation_date: integerOf(m.creation_date, '"creation_date"', report),
    expiry_date: integerOf(m.expiry_date, '"expiry_date"', report),
    properties: stringMapOf(m.properties, 'Property', report),
    templates,
  };
}

/** A metadata.yaml as found on disk (from an image): what is not valid is left out. */
export function readableContainerMetadata(doc: unknown): ContainerMetadata {
  return normalizeContainerMetadata(doc, () => {});
}
