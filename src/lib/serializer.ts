import fastJson from 'fast-json-stringify';
import { z } from 'zod';
import { serializerCompiler as zodSerializerCompiler } from 'fastify-type-provider-zod';
import type { FastifySerializerCompiler } from 'fastify/types/schema.js';

/**
 * Response serialisation. The Zod serializer re-validates every response
 * through `schema.encode()`, which costs a multiple of JSON.stringify on a
 * leaderboard page (tests/bench/RESULTS.md). Route responses are built by our own services,
 * so we compile each Zod response schema to JSON Schema once and serialise
 * with fast-json-stringify: it still writes only the declared fields (nothing
 * internal leaks), at a fraction of the cost. A schema that cannot be
 * expressed as JSON Schema falls back to the Zod serializer.
 */
export const serializerCompiler: FastifySerializerCompiler<z.ZodType> = (args) => {
  const { schema } = args as unknown as { schema: unknown };
  if (schema instanceof z.ZodType) {
    try {
      const json = z.toJSONSchema(schema, { target: 'draft-7', io: 'output', unrepresentable: 'throw', reused: 'inline' });
      const stringify: (data: unknown) => string = fastJson(json as Parameters<typeof fastJson>[0]);
      return (data: unknown): string => stringify(data);
    } catch {
      /* fall through */
    }
  }
  return zodSerializerCompiler(args) as (data: unknown) => string;
};

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * A serialised body kept to be sent many times, as its UTF-8 bytes. Node
 * writes a Buffer as it is; a string body is appended to the header block and
 * encoded again on every send, a measurable cost on a large cached page
 * (tests/bench/RESULTS.md, issue 21).
 */
export type CachedBody = Buffer;

/** The bytes a cache keeps for a body produced as a string (encoded once). */
export function cachedBody(body: string): CachedBody {
  return Buffer.from(body, 'utf8');
}
