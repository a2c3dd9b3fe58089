/** Run `load` once, on first use; every later call gets the same promise. */
export function lazy<T>(load: () => PromiseLike<T>): () => Promise<T> {
  let p: Promise<T> | undefined;
  return () => (p ??= Promise.resolve(load()));
}
