import { describe, expect, it } from 'vitest';
import { runScript } from './helpers/server-process.js';

/**
 * Runs settleTickObjectShape() in a fresh Node process (the state it changes is the process's) with
 * `--allow-natives-syntax` to compare hidden classes and `--expose-internals` to see the async hook counters.
 */
function inChild(): Promise<{ code: number | null; out: string }> {
  const script = `
    import { createRequire } from 'node:module';
    import { createHook } from 'node:async_hooks';
    import { settleTickObjectShape } from './src/lib/tick-shape.ts';
    const internals = createRequire(process.cwd() + '/')('internal/async_hooks');
    const shape = settleTickObjectShape();
    const initHooksLeft = internals.initHooksExist();
    let tick;
    const hook = createHook({ init(_id, type, _trigger, resource) { if (type === 'TickObject') tick ??= resource; } }).enable();
    process.nextTick(() => {});
    hook.disable();
    const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)');
    // Later ids of either kind (small integers, heap numbers) must not widen a field: that would replace the map.
    const [id, trigger] = Object.getOwnPropertySymbols(tick);
    const later = [
      { [id]: 7, [trigger]: 1, callback: () => {}, args: undefined },
      { [id]: 2 ** 40 + 0.5, [trigger]: -1.5, callback: () => {}, args: [1] },
    ];
    console.log(JSON.stringify({
      settled: shape !== undefined,
      idempotent: settleTickObjectShape() === shape,
      initHooksLeft,
      tickSharesTheShapesMap: shape !== undefined && haveSameMap(tick, shape),
      laterIdsKeepTheMap: shape !== undefined && later.every((o) => haveSameMap(o, shape)),
    }));
  `;
  return runScript(script, { nodeArgs: ['--expose-internals', '--allow-natives-syntax'] });
}

describe('settleTickObjectShape (issue 21)', () => {
  it("builds an object with the hidden class of Node's tick objects, without enabling an async hook", async () => {
    const { code, out } = await inChild();
    expect(code, out).toBe(0);
    const seen = JSON.parse(out.trim().split('\n').at(-1)!) as Record<string, boolean>;
    expect(seen).toMatchObject({ settled: true, idempotent: true, initHooksLeft: false });
    // Node 20's tick literal has the four keys rebuilt here; Node 22's has a fifth, unexposed one (nothing is shared).
    if (process.versions.node.startsWith('20.')) {
      // A tick object made afterwards has the map of the object built here, and later ids of either kind
      // (small integers, heap numbers) keep it: no field is widened, no map replaced.
      expect(seen).toMatchObject({ tickSharesTheShapesMap: true, laterIdsKeepTheMap: true });
    }
  });
});
