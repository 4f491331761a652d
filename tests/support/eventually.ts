/** How long `eventually` waits, how often it looks, and what the failure names. */
export interface EventuallyOptions {
  /** Give up after this long (ms); default 5 s. */
  timeoutMs?: number;
  /** Wait this long between looks (ms); default 25. */
  intervalMs?: number;
  /** What is awaited, for the failure message. */
  what?: string;
}

type Truthy<T> = Exclude<T, false | null | undefined | 0 | ''>;

/**
 * Looks at `check` until it answers a truthy value, and returns that value: for what the app does
 * in the background (deliveries, counters after a disconnect, a change crossing Redis). Fails
 * after the timeout; an error `check` throws fails at once. Runs outside vitest too (benches).
 */
export async function eventually<T>(check: () => T | Promise<T>, opts: number | EventuallyOptions = {}): Promise<Truthy<T>> {
  const { timeoutMs = 5_000, intervalMs = 25, what = 'condition' } = typeof opts === 'number' ? { timeoutMs: opts } : opts;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v as Truthy<T>;
    if (Date.now() > deadline) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
