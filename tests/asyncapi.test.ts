import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ajv } from 'ajv';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REALTIME_EVENTS } from '../src/domains/realtime/schemas.js';
import { buildTestApp, type TestApp } from './helpers/app.js';

/**
 * docs/decisions.md §15.4: the AsyncAPI document is valid AsyncAPI 3.0 (the
 * official JSON Schema of the specification, @asyncapi/specs) and carries
 * every channel and event of the realtime contract with its payload schema.
 */
type Json = Record<string, any>;

const require = createRequire(import.meta.url);
const specSchema = JSON.parse(readFileSync(require.resolve('@asyncapi/specs/schemas/3.0.0-without-$id.json'), 'utf8'));
const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
const validateSpec = ajv.compile(specSchema);

let t: TestApp;
let doc: Json;
beforeAll(async () => {
  t = await buildTestApp();
  const res = await t.app.inject({ method: 'GET', url: '/docs/asyncapi.json' });
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toMatch(/application\/json/);
  doc = res.json();
});
afterAll(async () => t?.close());

function resolve(ref: string): Json {
  expect(ref.startsWith('#/')).toBe(true);
  const node = ref
    .slice(2)
    .split('/')
    .reduce<any>((n, key) => n?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
  expect(node, ref).toBeDefined();
  // A channel's message is itself a reference to the component.
  return typeof node.$ref === 'string' ? resolve(node.$ref) : node;
}

describe('AsyncAPI document at /docs/asyncapi.json (docs/decisions.md §15.4)', () => {
  it('is public and valid against the AsyncAPI 3.0.0 JSON Schema', () => {
    expect(doc.asyncapi).toBe('3.0.0');
    expect(validateSpec(doc) ? [] : validateSpec.errors).toEqual([]);
    // The validator does reject what is not AsyncAPI 3.0.
    expect(validateSpec({ ...doc, channels: { broken: { address: 42 } } })).toBe(false);
    expect(validateSpec({ ...doc, operations: { x: { action: 'publish', channel: { $ref: '#/channels/market' } } } })).toBe(false);
  });

  it('every $ref resolves inside the document', () => {
    const refs: string[] = [];
    JSON.stringify(doc, (k, v) => {
      if (k === '$ref') refs.push(v);
      return v;
    });
    expect(refs.length).toBeGreaterThan(10);
    for (const r of refs) resolve(r);
  });

  it('every channel and event of REALTIME_EVENTS appears with its payload schema', () => {
    const channels = Object.values<Json>(doc.channels);
    for (const [key, events] of Object.entries(REALTIME_EVENTS) as Array<[string, Record<string, z.ZodType>]>) {
      // The private notifications room is what a client reaches by subscribing to `user:notifications`.
      const address = key === 'user:<userId>:notifications' ? 'user:notifications' : key.replace(/<(\w+)>/g, '{$1}');
      const channel = channels.find((c) => c.address === address);
      expect(channel, address).toBeDefined();
      for (const name of address.match(/\{(\w+)\}/g) ?? []) expect(channel!.parameters[name.slice(1, -1)]).toBeDefined();
      for (const [event, schema] of Object.entries(events)) {
        const message = Object.values<Json>(channel!.messages)
          .map((m) => resolve(m.$ref))
          .find((m) => m.name === event);
        expect(message, `${event} on ${address}`).toBeDefined();
        const payload = resolve(message!.payload.$ref);
        // The payload is the Zod schema itself: same fields, same required ones, same closed shape.
        const converted = z.toJSONSchema(schema, { target: 'draft-7', io: 'output' }) as Json;
        const expected: Json = converted.$ref ? converted.definitions[converted.$ref.split('/').pop()] : converted;
        expect(Object.keys(payload.properties).sort()).toEqual(Object.keys(expected.properties).sort());
        expect([...(payload.required ?? [])].sort()).toEqual([...(expected.required ?? [])].sort());
        expect(payload.additionalProperties).toEqual(expected.additionalProperties);
        // And an operation sends it.
        const sent = Object.values<Json>(doc.operations).filter(
          (o) => o.action === 'send' && resolve(o.channel.$ref) === channel && o.messages.some((m: Json) => resolve(m.$ref).name === event),
        );
        expect(sent, event).toHaveLength(1);
      }
    }
  });

  it('describes the events sent to one socket and the client requests with their acknowledgement', () => {
    const messages = Object.values<Json>(doc.components.messages);
    const names = messages.map((m) => m.name);
    expect(names).toEqual(expect.arrayContaining(['auth:expired', 'auth:revoked', 'subscribe', 'unsubscribe', 'auth', 'ack']));
    const received = Object.values<Json>(doc.operations).filter((o) => o.action === 'receive');
    expect(received.map((o) => resolve(o.messages[0].$ref).name).sort()).toEqual(['auth', 'subscribe', 'unsubscribe']);
    for (const o of received) expect(resolve(o.reply.messages[0].$ref).name).toBe('ack');
    const subscribe = resolve(messages.find((m) => m.name === 'subscribe')!.payload.$ref);
    expect(subscribe).toMatchObject({ type: 'object', required: ['channel'], additionalProperties: false });
    // Payload schemas compile, and the ack schema takes what the server acknowledges with.
    const withComponents = new Ajv({ strict: false, validateFormats: false });
    withComponents.addSchema({ components: doc.components }, 'doc');
    const ack = messages.find((m) => m.name === 'ack')!;
    const validateAck = withComponents.compile({ $ref: `doc${ack.payload.$ref}` });
    expect(validateAck({ ok: true })).toBe(true);
    expect(validateAck({ ok: true, seq: 42, reset: true })).toBe(true);
    expect(validateAck({ ok: false, error: { code: 'RATE_LIMITED', message: 'slow down', retryAfter: 12 } })).toBe(true);
    expect(validateAck({ ok: false, error: { code: 'NOPE', message: 'x' } })).toBe(false);
  });

  it('is linked from the OpenAPI document shown at /docs', async () => {
    const openapi = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json();
    expect(openapi.info.description).toContain('/docs/asyncapi.json');
    expect(openapi.paths['/docs/asyncapi.json']).toBeUndefined();
  });
});
