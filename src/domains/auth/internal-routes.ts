import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { problemResponses } from '../../errors.js';
import { createBetaKeys } from './beta-keys.js';

const CreateBetaKeysBodySchema = z
  .object({
    count: z.number().int().min(1).max(1000).default(1).describe('How many keys to mint (1–1000)'),
    uses: z.number().int().min(1).max(1_000_000).default(1).describe('How many times each key can be redeemed'),
  })
  .strict();

const CreateBetaKeysResponseSchema = z
  .object({
    keys: z.array(z.string()).describe('The new keys in clear; only their hashes are stored, so this is the only time they are shown'),
    uses: z.number().int(),
  })
  .meta({ id: 'CreatedBetaKeys' });

/** POST /api/v1/internal/beta-keys (registered only while INTERNAL_API_TOKEN is set). */
export const internalAuthRoutes: FastifyPluginAsyncZod = async (app) => {
  app.post(
    '/beta-keys',
    {
      config: { internal: true },
      schema: {
        operationId: 'createBetaKeys',
        tags: ['internal'],
        summary: 'Mint beta keys while the service runs',
        description:
          'The same as `npm run beta-keys -- create --count N --uses M`, for when the CLI cannot reach the database (the embedded database is held by the running service, or the database is only reachable from the service). Keys are returned once and never again.',
        body: CreateBetaKeysBodySchema,
        response: { 201: CreateBetaKeysResponseSchema, ...problemResponses(400, 401) },
      },
    },
    async (request, reply) => {
      const keys = await createBetaKeys(app.dbh, request.body);
      request.log.info({ count: keys.length, uses: request.body.uses }, 'beta keys minted');
      return reply.code(201).send({ keys, uses: request.body.uses });
    },
  );
};
