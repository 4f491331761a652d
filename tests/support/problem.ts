import { expect } from 'vitest';

/** What an `app.inject` answer offers (light-my-request's response). */
export interface InjectedResponse {
  statusCode: number;
  headers: Record<string, unknown>;
  body: string;
  json(): any;
}

/**
 * Checks an RFC 9457 problem+json answer (docs/decisions.md §2): its status (on the
 * answer and in the body), its stable `code` and its content type. Returns the body.
 */
export function expectProblem(res: InjectedResponse, status: number, code: string): any {
  const body = res.json();
  expect({ status: res.statusCode, code: body.code, bodyStatus: body.status }, res.body).toEqual({ status, code, bodyStatus: status });
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  return res.json();
}
