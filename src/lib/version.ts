import { readFileSync } from 'node:fs';

/**
 * The service's version from package.json, for the `User-Agent` of outgoing
 * requests. The file sits two levels up from src/lib/ and three from
 * dist/src/lib/; whichever is found first and names this package wins.
 */
function readVersion(): string {
  for (const rel of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'predict-backend' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      /* try the next location */
    }
  }
  return '0.0.0';
}

export const APP_NAME = 'predict-backend';
export const APP_VERSION = readVersion();
