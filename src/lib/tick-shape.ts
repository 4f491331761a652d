import { AsyncResource } from 'node:async_hooks';

const noop = () => {};
/** Held for the life of the process, so the maps it shares with the tick objects always have a live user. */
let shape: object | undefined;

/**
 * Lays down the hidden classes of Node's `process.nextTick` objects from our
 * own code before the service starts, which keeps V8's inline caches for them
 * monomorphic. Called once, first thing in `main()`.
 *
 * Why (tests/bench/RESULTS.md, issue 21): Node builds every tick object as a
 * literal with computed symbol keys, `{ [async_id_symbol]: id,
 * [trigger_async_id_symbol]: trigger, callback, args }`
 * (lib/internal/process/task_queues.js in Node 20). In most starts of this
 * service the inline caches that define the second to fourth keys ended up
 * MEGAMORPHIC (`%DebugPrint(process.nextTick)` under `--allow-natives-syntax`),
 * and from then on every tick object (five to seven per HTTP request, from
 * Node's own stream and HTTP code) had its keys defined through the V8 runtime:
 * a sizeable share of the CPU of a small response. A minimal Fastify process never
 * got there. Building one object with the same keys in the same order, early,
 * left them monomorphic in every start measured; a literal of the same form with
 * other symbols did not, so it is the shared maps that matter (why the start-up
 * history of this process otherwise ends in the megamorphic state was not
 * established). The symbols are Node's own: an AsyncResource carries both.
 *
 * It allocates one object and enables no async hook (an init hook would turn on
 * V8's promise hooks, which cost every promise for the life of the process).
 * Returns undefined, doing nothing, when the symbols are not found. On Node 22
 * the tick literal has a fifth key Node does not expose, so the object built
 * here shares no map with it and changes nothing there.
 */
export function settleTickObjectShape(): object | undefined {
  if (shape) return shape;
  const keys = Object.getOwnPropertySymbols(new AsyncResource('TickObjectShape'));
  const id = keys.find((k) => k.description === 'async_id_symbol');
  const trigger = keys.find((k) => k.description === 'trigger_async_id_symbol');
  if (!id || !trigger) return undefined;
  shape = { [id]: 0.5, [trigger]: 0.5, callback: noop, args: undefined };
  return shape;
}
