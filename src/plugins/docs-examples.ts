/**
 * Examples for the API reference (issue 35 §5): every JSON success response
 * of the OpenAPI document gets an `example` built from its own schema, with
 * plausible values chosen by field name (a wallet address for
 * `walletAddress`, an ISO instant for `…At`, a price between 0 and 1 for
 * `…Price`), within the schema's enums and bounds. Swagger UI otherwise
 * invents them from the bounds, which showed Zod's safe-integer limits
 * (-9007199254740991) as the example of every unbounded integer.
 * `tests/docs.test.ts` validates every example against its schema.
 */
type Json = Record<string, unknown>;

const INSTANT = '2026-11-26T21:00:00.000Z';
const EVM = '0x52908400098527886E0F7030069857D2E4169EE7';
const UUIDS = ['3f1c2a9e-8b7d-4e6f-9a1b-2c3d4e5f6a7b', '9b2e4c71-0d3a-4f58-8e6b-7a1c5d2f9e30'];

/** String values by field name, first match wins. */
const STRINGS: Array<[RegExp, string]> = [
  [/At$|^(at|timestamp|since)$/, INSTANT],
  [/^(walletAddress|address|proxyWallet)$/, EVM],
  [/^(userId|notificationId|alertId|sessionId|instanceId)$/, UUIDS[0]],
  [/^marketId$/, 'pm-512357'],
  [/^eventId$/, 'pm-16085'],
  [/^slug$/, 'bitcoin-above-100k-on-december-31'],
  [/^conditionId$/, '0x4f0a5c7e2b1d9a3c6e8f0b2d4a6c8e0f1a3b5c7d9e1f2a4b6c8d0e2f4a6b8c0d'],
  [/^(title|marketTitle|eventTitle)$/, 'Bitcoin above $100k on December 31?'],
  [/^message$/, 'Bitcoin above $100k on December 31? crossed 0.60 (Yes).'],
  [/^(displayName|username|userName)$/, 'trader42'],
  [/^name$/, 'price-sync'],
  [/^id$/, UUIDS[1]],
  [/^(avatarUrl|imageUrl|image|icon)$/, 'https://api.dicebear.com/9.x/identicon/svg?seed=0x52908400098527886e0f7030069857d2e4169ee7'],
  [/^deepLink$/, 'https://t.me/predict_bot?start=Yk3v0c1QmZ8n2sR5tW7xA9dF4hJ6kL1pN3qS5uV7wX'],
  [/^(accessToken|token)$/, 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIzZjFjMmE5ZSJ9.c2lnbmF0dXJl'],
  [/^refreshToken$/, 'Yk3v0c1QmZ8n2sR5tW7xA9dF4hJ6kL1pN3qS5uV7wX0'],
  [/^(nonce|code)$/, 'Yk3v0c1QmZ8n2sR5tW7xA9dF4hJ6kL1p'],
  [/[cC]ursor$/, 'eyJrIjpbIjIwMjYtMTEtMjYiLCIzZjFjIl19.aG1hYw'],
  [/^category$/, 'CRYPTO'],
  [/^outcome$/, 'Yes'],
  [/^side$/, 'yes'],
  [/^schedule$/, '*/5 * * * *'],
  [/^(error|lastError|pausedReason)$/, 'HTTP 503 from the venue after 4 attempts'],
  [/^(chain)$/, 'evm'],
  [/^(ip)$/, '203.0.113.7'],
  [/^(userAgent)$/, 'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X)'],
  [/^(keys|key)$/, 'BETA-7Q2M-K9XD-4TPL'],
  [/^(status)$/, 'ok'],
  [/^(version)$/, '1.0.0'],
  [/^(description|detail)$/, 'Resolves Yes if the Coinbase BTC-USD price is above $100,000 at 23:59 UTC on December 31.'],
  [/^(channel)$/, 'market:pm-512357'],
];

/** Numbers by field name: [pattern, integer value, fractional value]. */
const NUMBERS: Array<[RegExp, number, number]> = [
  [/[pP]rice$|^(winRate|probability|change)$/, 1, 0.62],
  [/^(roi|sharpeRatio)$/, 1, 0.18],
  [/^(limit)$/, 20, 20],
  [/^(total|marketCount)$/, 134, 134],
  [/^(rank)$/, 7, 7],
  [/^(rankChange)$/, 3, 3],
  [/^(seq)$/, 42, 42],
  [/^(unreadCount|count|updated|revoked|attempts|triggerCount)$/, 3, 3],
  [/[vV]olume|[pP]nl$|^(bestTrade|avgTrade|value|size|amount|pnl)$/, 125_000, 125_000.5],
  [/Minutes$/, 60, 60],
  [/^(items|pending|failed|held|tradeCount|wins|losses|totalTrades|uses)$/, 12, 12],
  [/^(id)$/, 1042, 1042],
];

const pick = <T>(table: Array<[RegExp, ...T[]]>, name: string | undefined) => (name ? table.find(([re]) => re.test(name)) : undefined);

function clamp(value: number, s: Json, integer: boolean): number {
  let v = value;
  const min = (s.minimum ?? s.exclusiveMinimum) as number | undefined;
  const max = (s.maximum ?? s.exclusiveMaximum) as number | undefined;
  if (min !== undefined && v < min) v = s.exclusiveMinimum !== undefined ? min + (integer ? 1 : 0.01) : min;
  if (max !== undefined && v > max) v = s.exclusiveMaximum !== undefined ? max - (integer ? 1 : 0.01) : max;
  return integer ? Math.round(v) : v;
}

function stringFor(s: Json, name: string | undefined): string {
  if (s.format === 'date-time') return INSTANT;
  if (s.format === 'uuid') return UUIDS[0];
  if (s.format === 'uri' || s.format === 'url')
    return pick(STRINGS, name)?.[1]?.startsWith('http') ? pick(STRINGS, name)![1] : 'https://example.com/resource';
  if (s.format === 'email') return 'trader@example.com';
  const byName = pick(STRINGS, name)?.[1];
  let v = byName ?? 'text';
  if (typeof s.pattern === 'string' && !new RegExp(s.pattern, 'u').test(v)) v = byPattern(s.pattern) ?? v;
  const max = s.maxLength as number | undefined;
  const min = s.minLength as number | undefined;
  if (max !== undefined && v.length > max) v = v.slice(0, max);
  if (min !== undefined && v.length < min) v = v.padEnd(min, 'x');
  return v;
}

/** A few patterns the schemas use that no name rule satisfies. */
function byPattern(pattern: string): string | undefined {
  for (const candidate of ['22:00', 'Europe/Berlin', INSTANT, UUIDS[0], EVM, 'pm-512357', 'abc']) {
    if (new RegExp(pattern, 'u').test(candidate)) return candidate;
  }
  return undefined;
}

/** An example value for `schema` (a node of `doc`, `$ref`s resolved against its components). */
export function exampleFor(schema: unknown, components: Json, name?: string, depth = 0): unknown {
  if (!schema || typeof schema !== 'object' || depth > 12) return null;
  const s = schema as Json;
  if (s.example !== undefined) return s.example;
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0];
  if (typeof s.$ref === 'string') {
    const ref = s.$ref.replace('#/components/schemas/', '');
    return exampleFor(components[ref], components, name, depth + 1);
  }
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum)) return s.enum.find((v) => v !== null) ?? s.enum[0];
  for (const key of ['anyOf', 'oneOf'] as const) {
    if (Array.isArray(s[key])) {
      const branches = s[key] as Json[];
      const real = branches.find((b) => b.type !== 'null') ?? branches[0];
      return exampleFor(real, components, name, depth + 1);
    }
  }
  if (Array.isArray(s.allOf)) {
    return Object.assign({}, ...(s.allOf as Json[]).map((b) => exampleFor(b, components, name, depth + 1) as object));
  }
  const type = Array.isArray(s.type) ? (s.type as string[]).find((t) => t !== 'null') : (s.type as string | undefined);
  switch (type) {
    case 'object': {
      const out: Json = {};
      for (const [key, value] of Object.entries((s.properties ?? {}) as Json)) out[key] = exampleFor(value, components, key, depth + 1);
      if (Object.keys(out).length === 0 && s.additionalProperties && typeof s.additionalProperties === 'object') {
        out[name === 'types' ? 'price_alert_triggered' : 'key'] = exampleFor(s.additionalProperties, components, undefined, depth + 1);
      }
      return out;
    }
    case 'array': {
      const item = exampleFor(s.items, components, name?.replace(/s$/, ''), depth + 1);
      const min = (s.minItems as number | undefined) ?? 1;
      const max = (s.maxItems as number | undefined) ?? 1;
      if (max === 0) return [];
      const n = Math.max(1, Math.min(min, max));
      if (Array.isArray((s.items as Json | undefined)?.enum)) {
        return ((s.items as Json).enum as unknown[]).slice(0, n);
      }
      return Array.from({ length: n }, () => item);
    }
    case 'string':
      return stringFor(s, name);
    case 'integer': {
      const row = pick(NUMBERS, name) as [RegExp, number, number] | undefined;
      return clamp(row?.[1] ?? 1, s, true);
    }
    case 'number': {
      const row = pick(NUMBERS, name) as [RegExp, number, number] | undefined;
      return clamp(row?.[2] ?? 1.5, s, false);
    }
    case 'boolean':
      return name === 'read' || name === 'stale' || name === 'paused' ? false : true;
    case 'null':
      return null;
    default:
      return s.properties ? exampleFor({ ...s, type: 'object' }, components, name, depth + 1) : null;
  }
}

const SAFE = Number.MAX_SAFE_INTEGER;

/**
 * Drops Zod's implicit safe-integer bounds (`z.number().int()` emits
 * ±9007199254740991): they state no real limit and Swagger UI showed them as
 * examples. Real bounds stay.
 */
export function dropSafeIntegerBounds(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(dropSafeIntegerBounds);
  if (!node || typeof node !== 'object') return;
  const s = node as Json;
  if (s.minimum === -SAFE) delete s.minimum;
  if (s.maximum === SAFE) delete s.maximum;
  for (const v of Object.values(s)) dropSafeIntegerBounds(v);
}

/** Adds an `example` to every JSON success response of the document that has none. */
export function addResponseExamples(doc: Json): void {
  const components = ((doc.components as Json | undefined)?.schemas ?? {}) as Json;
  for (const item of Object.values((doc.paths ?? {}) as Json)) {
    for (const op of Object.values(item as Json)) {
      const responses = (op as Json | undefined)?.responses as Json | undefined;
      if (!responses) continue;
      for (const [status, response] of Object.entries(responses)) {
        if (!status.startsWith('2')) continue;
        const content = (response as Json).content as Record<string, Json> | undefined;
        for (const [type, media] of Object.entries(content ?? {})) {
          if (!type.includes('json') || media.example !== undefined || media.examples !== undefined) continue;
          media.example = exampleFor(media.schema, components);
        }
      }
    }
  }
}
