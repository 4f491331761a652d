import type { RegistryDeps } from './hot-market-registry.js';

/**
 * The hot-market lease (docs/decisions.md §11.2): one instance holds the
 * venue connections, through a Redis key with renewal; without Redis the
 * only instance holds it.
 */

export interface LeaseOptions {
  /** How long a holder's claim lives, and how often it is renewed (others try as often). */
  leaseTtlMs: number;
  leaseRenewMs: number;
}

export interface HotMarketsLease {
  isHolder(): boolean;
  /** Releases the lease if held (another instance takes over at its next try). */
  close(): Promise<void>;
}

// Take the lease when free, renew it when ours (the value is the holder's instance id): one
// script for both, so a slow answer can never make the holder think someone else has it.
const CLAIM = `local v = redis.call('get', KEYS[1])
if v == ARGV[1] then redis.call('pexpire', KEYS[1], ARGV[2]) return 1 end
if not v then redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
return 0`;
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

export function createHotMarketsLease(
  deps: Omit<RegistryDeps, 'options'> & {
    options: LeaseOptions;
    onChange(holder: boolean): void;
  },
): HotMarketsLease {
  const { redis } = deps;
  if (!redis) {
    // Without Redis the instance is alone (docs/operations.md "Several instances"): it holds the venue sockets.
    queueMicrotask(() => deps.onChange(true));
    return { isHolder: () => true, close: () => Promise.resolve() };
  }
  const key = `${deps.prefix}hot:lease`;
  let holder = false;
  let closed = false;
  const set = (next: boolean) => {
    if (next === holder) return;
    holder = next;
    deps.log.info({ holder }, holder ? 'hot markets: this instance holds the venue sockets' : 'hot markets: lease lost');
    deps.onChange(holder);
  };
  let ticking = false;
  const tick = async () => {
    if (ticking) return;
    ticking = true;
    try {
      const claimed = await redis.eval(CLAIM, 1, key, deps.instanceId, String(deps.options.leaseTtlMs));
      if (!closed) set(Number(claimed) === 1);
    } catch (err) {
      // Unsure whether we still hold it: step down, so two holders never overlap for long.
      if (!closed) set(false);
      deps.log.warn({ err }, 'hot markets: lease check failed');
    } finally {
      ticking = false;
    }
  };
  void tick();
  const timer = setInterval(() => void tick(), deps.options.leaseRenewMs);
  timer.unref();
  return {
    isHolder: () => holder,
    async close() {
      closed = true;
      clearInterval(timer);
      const was = holder;
      holder = false;
      if (was) await redis.eval(RELEASE, 1, key, deps.instanceId).catch(() => undefined);
    },
  };
}
