import { parseBool } from '../util/parse-bool.ts';

export const DEFAULT_PROJECT = 'default';

/** The project whose profiles a project uses: itself with features.profiles, else `default`. */
export function profileProjectOf(p: { name: string; config: Record<string, string> }): string {
  return p.name === DEFAULT_PROJECT || parseBool(p.config['features.profiles']) ? p.name : DEFAULT_PROJECT;
}
