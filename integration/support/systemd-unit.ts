/** What a test needs of a rendered systemd service unit: ExecStart/ExecStop argv and Environment=. */
export interface ServiceUnit {
  execStart: string[];
  execStop: string[];
  environment: Record<string, string>;
  /** Every `Key=value` of [Service], last one wins. */
  service: Record<string, string>;
}

/** Parse the [Service] section (plain words: svcd's unit has no quoting or specifiers in these lines). */
export function parseServiceUnit(text: string): ServiceUnit {
  const service: Record<string, string> = {};
  const environment: Record<string, string> = {};
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      section = header[1]!;
      continue;
    }
    const eq = line.indexOf('=');
    if (section !== 'Service' || eq < 0) continue;
    const [key, value] = [line.slice(0, eq), line.slice(eq + 1)];
    service[key] = value;
    if (key === 'Environment')
      for (const kv of value.split(/\s+/)) environment[kv.slice(0, kv.indexOf('='))] = kv.slice(kv.indexOf('=') + 1);
  }
  const argv = (v: string | undefined) => (v ?? '').split(/\s+/).filter(Boolean);
  return { execStart: argv(service.ExecStart), execStop: argv(service.ExecStop), environment, service };
}
