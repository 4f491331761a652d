import { z } from 'zod';

/**
 * Wire types read the way the venues' own SDKs read them (docs/venues.md
 * "What we call": a numeric field may arrive as a JSON number or a decimal
 * string; an array may arrive JSON-encoded inside a string). A value of the
 * right meaning in either form parses; anything else fails the row, which
 * the caller skips and counts.
 */

/** A decimal as Polymarket and Kalshi write them in strings: `"0.58"`, `"-12"`, `"1e-7"`. */
export const DECIMAL = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/;

/** A JSON number, or a decimal string (`"0.58"`); finite either way. */
export const wireNumber = z.union([z.number(), z.string().trim().regex(DECIMAL).transform(Number)]).pipe(z.number().finite());

/** wireNumber within [0, 1]. */
export const wireProbability = wireNumber.pipe(z.number().min(0).max(1));

/** wireNumber ≥ 0. */
export const wireNonNegative = wireNumber.pipe(z.number().nonnegative());

/** A whole number, as a JSON number or a string of digits (`rank: "1"`). */
export const wireInt = wireNumber.pipe(z.number().int());

/** Gamma encodes some arrays as JSON inside a string (`"[\"Yes\", \"No\"]"`): decode the second layer. */
export function decodeJsonStringArray(value: string): string[] | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || !parsed.every((v) => typeof v === 'string')) return undefined;
  return parsed;
}

/**
 * An array of strings sent either as a real array or JSON-encoded in a
 * string (Gamma `outcomes`, `clobTokenIds`, `positionIds`: the SDKs accept both).
 */
export const wireStringArray = z.union([
  z.array(z.string()),
  z.string().transform((s, ctx) => {
    const arr = decodeJsonStringArray(s);
    if (!arr) {
      ctx.addIssue({ code: 'custom', message: 'not a JSON-encoded array of strings' });
      return z.NEVER;
    }
    return arr;
  }),
]);
