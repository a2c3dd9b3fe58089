/** `svcd` / `svcd daemon`: run the daemon (src/main.ts); it runs until a signal, so no exit code here. */
export async function daemon(): Promise<undefined> {
  const { main } = await import('../../main.ts');
  await main();
  return undefined;
}
