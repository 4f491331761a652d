import { expect } from 'vitest';

/** What an `app.inject` answer offers (light-my-request's response). */
export interface InjectedResponse {
  statusCode: number;
  headers: Record<string, unknown>;
  body: string;
  json(): any;
}

/**
 * Checks an RFC 9457 problem+json answer (docs/decisions.md §2): its status,
 * its stable `code` and its content type. Returns the body for further checks.
 */
export function expectProblem(res: InjectedResponse, status: number, code: string): any {
  expect({ status: res.statusCode, code: res.json().code }, res.body).toEqual({ status, code });
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  return res.json();
}
