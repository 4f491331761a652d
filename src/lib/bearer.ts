/**
 * The token of an `Authorization: Bearer <token>` header (scheme
 * case-insensitive, one token, surrounding spaces allowed), or undefined when
 * the header is absent, repeated or not of that form.
 */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string') return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1] : undefined;
}
