import { z } from 'zod';

/** How deeply a JSON value nests (a scalar is 0, `{}` and `[]` are 1), counted without recursion. */
export function jsonDepth(value: unknown, stopAt = Infinity): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    const depth = d + 1;
    if (depth > max) max = depth;
    if (max > stopAt) return max;
    for (const child of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>)) stack.push([child, depth]);
  }
  return max;
}

/**
 * A free-form JSON object that nests at most `maxDepth` levels: deeper input
 * is a 400 VALIDATION_ERROR at the schema, before it can exhaust a stack in
 * serialisation or the database (it used to answer 500).
 */
export function shallowJsonObject(maxDepth: number) {
  return z
    .record(z.string().max(100), z.unknown())
    .refine((v) => jsonDepth(v, maxDepth) <= maxDepth, { message: `must not nest deeper than ${maxDepth} levels` });
}
