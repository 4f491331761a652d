/**
 * Maps items with at most `limit` calls of `fn` in flight (bounded concurrency
 * toward a venue or a provider); results keep the items' order. A limit below
 * 1 (or not a number) runs one at a time. After the first rejection no further
 * item is started, and the returned promise rejects with that error.
 */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < items.length) {
      const i = next++;
      try {
        out[i] = await fn(items[i], i);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  const workers = Math.max(1, Math.min(Math.floor(limit) || 1, items.length));
  await Promise.all(Array.from({ length: workers }, worker));
  return out;
}
