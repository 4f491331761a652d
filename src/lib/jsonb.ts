/**
 * A value as PostgreSQL's `jsonb` gives it back once stored: what
 * JSON.stringify drops is dropped (undefined, functions and symbols; in
 * arrays they become null), `toJSON` is applied, non-finite numbers are null,
 * and every object's keys come shortest first, then in byte order (jsonb's
 * own order). Code that stores a jsonb value and also hands the value on
 * itself (the notify path's live stream payloads) uses it so that both are
 * the same JSON, key order included, without reading the value back.
 */
export function jsonbValue(value: unknown): unknown {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (value === null || typeof value !== 'object') return value;
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') return jsonbValue((toJSON as () => unknown).call(value));
  if (Array.isArray(value)) {
    return value.map((x) => {
      const y = jsonbValue(x);
      return dropped(y) ? null : y;
    });
  }
  const source = value as Record<string, unknown>;
  const keys = Object.keys(source).sort(jsonbKeyOrder);
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const y = jsonbValue(source[key]);
    if (!dropped(y)) out[key] = y;
  }
  return out;
}

/** jsonbValue of an object (a notification's `data`); undefined or null is `{}`. */
export function jsonbObject(value: Record<string, unknown> | undefined | null): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  return jsonbValue(value) as Record<string, unknown>;
}

const dropped = (x: unknown) => x === undefined || typeof x === 'function' || typeof x === 'symbol';

/** Only ASCII: UTF-16 length is UTF-8 length, and code unit order is byte order. */
function ascii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** jsonb's key order: by length in UTF-8 bytes, then bytewise. */
export function jsonbKeyOrder(a: string, b: string): number {
  if (ascii(a) && ascii(b)) {
    if (a.length !== b.length) return a.length - b.length;
    return a < b ? -1 : a > b ? 1 : 0;
  }
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length !== y.length ? x.length - y.length : Buffer.compare(x, y);
}
