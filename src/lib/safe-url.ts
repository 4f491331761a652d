/**
 * A venue's image or avatar URL as we pass it on: a well-formed `https` URL
 * in its normalised form (`new URL(…).href`: quotes and spaces in the path
 * percent-encoded), else null. The venues' values go into `<img src>` on
 * clients: `https://x" onerror=…` must never reach one as is (issue #34).
 * No credentials, a host name of letters, digits, dots and hyphens (IDN in
 * punycode), an IPv4 or a bracketed IPv6 address, at most 2,000 characters.
 */
const HOST = /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*|\[[0-9a-f:.]+\])$/;

export function httpsUrl(raw: unknown, maxLength = 2000): string | null {
  if (typeof raw !== 'string') return null;
  const s = raw.trim();
  if (s.length > maxLength || !/^https:\/\//i.test(s)) return null;
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return null;
  }
  if (u.protocol !== 'https:' || u.username !== '' || u.password !== '' || !HOST.test(u.hostname)) return null;
  return u.href.length <= maxLength ? u.href : null;
}
