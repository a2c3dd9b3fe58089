import { parse } from 'yaml';
import { InvalidImageError } from './errors.ts';

/** What svcd reads from an image's metadata.yaml. */
export interface ImageMetadata {
  architecture: string;
  /** creation_date (seconds since the epoch). */
  creationDate: number;
  /** expiry_date, when given. */
  expiryDate?: number | undefined;
  properties: Record<string, string>;
  /** Template file paths → settings, kept as read (the container code renders them). */
  templates: Record<string, unknown>;
}

/** Architecture names and the aliases LXD accepts for them. */
const ARCHITECTURES = new Set([
  'i686',
  'x86_64',
  'armv6l',
  'armv7l',
  'armv8l',
  'aarch64',
  'ppc',
  'ppc64',
  'ppc64le',
  's390x',
  'mips',
  'mips64',
  'riscv32',
  'riscv64',
  'loongarch64',
  'i386',
  'i586',
  'x86',
  'amd64',
  'x86-64',
  'arm',
  'armel',
  'armhf',
  'arm64',
  'powerpc',
  'powerpc64',
  'ppc64el',
  'mipsel',
  'mips64el',
  'riscv',
  'loong64',
]);

const scalar = (v: unknown) => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

/** Parse and check metadata.yaml: architecture and creation_date are required (as in LXD). */
export function parseImageMetadata(text: string): ImageMetadata {
  let doc: unknown;
  try {
    doc = parse(text, { maxAliasCount: 100 });
  } catch (e) {
    throw new InvalidImageError(`Invalid metadata.yaml: ${(e as Error).message}`);
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc))
    throw new InvalidImageError('Invalid metadata.yaml: expected a mapping');
  const m = doc as Record<string, unknown>;
  if (typeof m.architecture !== 'string' || m.architecture === '')
    throw new InvalidImageError('Invalid metadata.yaml: architecture is required');
  if (!ARCHITECTURES.has(m.architecture))
    throw new InvalidImageError(`Invalid metadata.yaml: unknown architecture "${m.architecture}"`);
  const creation = Number(m.creation_date);
  if (!Number.isInteger(creation) || creation <= 0)
    throw new InvalidImageError('Invalid metadata.yaml: creation_date is required (seconds since the epoch)');
  const expiry = m.expiry_date === undefined || m.expiry_date === null ? undefined : Number(m.expiry_date);
  if (expiry !== undefined && (!Number.isInteger(expiry) || expiry < 0))
    throw new InvalidImageError('Invalid metadata.yaml: expiry_date must be seconds since the epoch');
  const properties: Record<string, string> = {};
  if (m.properties !== undefined && m.properties !== null) {
    if (typeof m.properties !== 'object' || Array.isArray(m.properties))
      throw new InvalidImageError('Invalid metadata.yaml: properties must be a mapping');
    for (const [k, v] of Object.entries(m.properties as Record<string, unknown>)) {
      if (v === null) continue;
      if (!scalar(v)) throw new InvalidImageError(`Invalid metadata.yaml: property "${k}" must be a string`);
      properties[k] = String(v);
    }
  }
  const templates =
    m.templates && typeof m.templates === 'object' && !Array.isArray(m.templates)
      ? (m.templates as Record<string, unknown>)
      : {};
  return {
    architecture: m.architecture,
    creationDate: creation,
    expiryDate: expiry || undefined,
    properties,
    templates,
  };
}
