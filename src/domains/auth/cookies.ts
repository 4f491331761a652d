import type { FastifyReply } from 'fastify';
import type { CookieSerializeOptions } from '@fastify/cookie';
import type { Config } from '../../config.js';

export const REFRESH_COOKIE = 'refresh_token';
export const LOGGED_IN_COOKIE = 'logged_in';
export const BETA_COOKIE = 'beta_access';
export const SESSION_MAX_AGE_SECONDS = 90 * 24 * 60 * 60;

/**
 * docs/decisions.md §3.7: SameSite=Lax in development (and tests), SameSite=None;
 * Secure in production (the SPA is on another site); optional COOKIE_DOMAIN.
 */
function base(config: Config): CookieSerializeOptions {
  const opts: CookieSerializeOptions = config.isProduction ? { sameSite: 'none', secure: true } : { sameSite: 'lax', secure: false };
  if (config.COOKIE_DOMAIN) opts.domain = config.COOKIE_DOMAIN;
  return opts;
}

const refreshOpts = (config: Config): CookieSerializeOptions => ({ ...base(config), httpOnly: true, path: '/api/v1/auth' });
const markerOpts = (config: Config): CookieSerializeOptions => ({ ...base(config), httpOnly: false, path: '/' });

/** The three cookies of a sign-in or refresh (docs/api-contract.md §4.1). */
export function setSessionCookies(reply: FastifyReply, config: Config, refreshToken: string): void {
  reply.setCookie(REFRESH_COOKIE, refreshToken, { ...refreshOpts(config), maxAge: SESSION_MAX_AGE_SECONDS });
  reply.setCookie(LOGGED_IN_COOKIE, '1', { ...markerOpts(config), maxAge: SESSION_MAX_AGE_SECONDS });
  reply.setCookie(BETA_COOKIE, '1', { ...markerOpts(config), maxAge: SESSION_MAX_AGE_SECONDS });
}

export function setBetaCookie(reply: FastifyReply, config: Config): void {
  reply.setCookie(BETA_COOKIE, '1', { ...markerOpts(config), maxAge: SESSION_MAX_AGE_SECONDS });
}

/** Logout and failed refreshes: the same names, paths and attributes, expired. */
export function clearSessionCookies(reply: FastifyReply, config: Config): void {
  reply.clearCookie(REFRESH_COOKIE, refreshOpts(config));
  reply.clearCookie(LOGGED_IN_COOKIE, markerOpts(config));
  reply.clearCookie(BETA_COOKIE, markerOpts(config));
}
