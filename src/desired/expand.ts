/** Profiles applied in order, then the container's own config and devices on top (later wins). */
export function expandConfig(
  profiles: { config: Record<string, string>; devices: Record<string, Record<string, string>> }[],
  local: { config: Record<string, string>; devices: Record<string, Record<string, string>> },
): { config: Record<string, string>; devices: Record<string, Record<string, string>> } {
  const config: Record<string, string> = {};
  const devices: Record<string, Record<string, string>> = {};
  for (const p of [...profiles, local]) {
    Object.assign(config, p.config);
    // A device is replaced as a whole, never merged property by property.
    for (const [name, dev] of Object.entries(p.devices)) devices[name] = { ...dev };
  }
  return { config, devices };
}
