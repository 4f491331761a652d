/**
 * The logger's `err` serializer: database errors are logged by the shape of
 * their query, never its values (docs/decisions.md §3.11: no tokens, secrets
 * or personal data in logs). Drizzle's query error carries the SQL parameters
 * in its message and stack ("params: …"), postgres-js and PGlite errors carry
 * them in `parameters`/`args` and row values in `detail` ("Key (token)=(…)
 * already exists"), and data exceptions quote the offending input in their
 * message. What is kept: the query text, SQLSTATE code, constraint, table,
 * column and the stack frames.
 */

const DROPPED = new Set(['params', 'parameters', 'args', 'detail', 'where', 'internalQuery', 'hint', 'raw', 'cause', 'query']);
const KEPT_TYPES = new Set(['string', 'number', 'boolean']);
const MAX_CAUSES = 5;

type ErrorLike = Error & { code?: unknown; query?: unknown; params?: unknown; cause?: unknown };

const isSqlState = (code: unknown): code is string => typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);

function safeMessage(e: ErrorLike): string {
  // Node's AggregateError (a refused connection to every address of `localhost`) has an empty message: say its parts.
  if (e.message === '' && Array.isArray((e as { errors?: unknown }).errors)) {
    return (e as unknown as { errors: unknown[] }).errors.map((x) => (x instanceof Error ? x.message : String(x))).join('; ');
  }
  // Drizzle: `Failed query: <sql>\nparams: <values>`: the SQL only.
  if (typeof e.query === 'string' && 'params' in e) return `Failed query: ${e.query}`;
  // Data exceptions quote the input they refused: `invalid input syntax for type uuid: "…"`.
  if (isSqlState(e.code) && e.code.startsWith('22')) return e.message.replace(/"[^"]*"/g, '"[redacted]"');
  return e.message;
}

function frames(stack: string | undefined): string {
  if (!stack) return '';
  return stack
    .split('\n')
    .filter((l) => /^\s+at /.test(l))
    .join('\n');
}

export interface SerializedError {
  [key: string]: unknown;
  type: string;
  message: string;
  stack: string;
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v)?.slice(0, 500) ?? String(v);
  } catch {
    return String(v);
  }
}

export function serializeError(value: Error): SerializedError {
  if (!(value instanceof Error)) {
    // A plain `{ message }` (or any object) is logged by its message, never as `[object Object]` (issue #34).
    const m = value !== null && typeof value === 'object' ? (value as { message?: unknown }).message : undefined;
    const message = typeof m === 'string' ? m : typeof value === 'object' ? safeJson(value) : String(value);
    return { type: typeof value, message, stack: '' };
  }
  const chain: ErrorLike[] = [];
  for (let e: unknown = value; e instanceof Error && chain.length < MAX_CAUSES && !chain.includes(e); e = (e as ErrorLike).cause) {
    chain.push(e);
  }
  const first = chain[0];
  const type = first.constructor?.name ?? first.name;
  const message = chain.map(safeMessage).join('; caused by: ');
  const out: SerializedError = { type, message, stack: `${type}: ${safeMessage(first)}\n${frames(first.stack)}` };
  for (const e of chain) {
    if (typeof e.query === 'string' && out.query === undefined) out.query = e.query;
    for (const key of Object.keys(e)) {
      if (DROPPED.has(key) || out[key] !== undefined) continue;
      const v = (e as unknown as Record<string, unknown>)[key];
      if (KEPT_TYPES.has(typeof v)) out[key] = v;
    }
  }
  return out;
}
