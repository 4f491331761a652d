import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseEnv } from 'node:util';

/**
 * What a developer's machine adds to the environment before the config is
 * parsed (src/server.ts and the CLIs call it; never the app, never tests):
 * variables from `./.env` when that file exists (the environment wins), and,
 * outside production, a JWT_SECRET kept in `./.data/jwt-secret` so tokens
 * and cursors survive restarts and `npm run dev` reloads. Production never
 * gets a generated key: the config still requires JWT_SECRET there.
 */
export interface DevEnv {
  env: Record<string, string | undefined>;
  /** Set when JWT_SECRET came from (or was just written to) this file. */
  jwtSecretFile?: string;
  /** Set when `.env` was read. */
  envFile?: string;
}

export function loadDevEnv(processEnv: Record<string, string | undefined>, cwd = process.cwd()): DevEnv {
  const envFile = resolve(cwd, '.env');
  const fromFile = existsSync(envFile) ? parseEnv(readFileSync(envFile, 'utf8')) : undefined;
  const env: Record<string, string | undefined> = { ...fromFile, ...processEnv };
  const out: DevEnv = { env, envFile: fromFile ? envFile : undefined };
  const production = (env.NODE_ENV ?? '').trim() === 'production';
  if (!production && !env.JWT_SECRET?.trim()) {
    const file = join(resolve(cwd, '.data'), 'jwt-secret');
    const secret = developmentSecret(file);
    if (secret) {
      env.JWT_SECRET = secret;
      out.jwtSecretFile = file;
    }
  }
  return out;
}

/** Reads the kept development key, creating it on first use; undefined when the folder is not writable. */
function developmentSecret(file: string): string | undefined {
  const read = () => {
    const s = readFileSync(file, 'utf8').trim();
    return s.length >= 32 ? s : undefined;
  };
  try {
    if (existsSync(file)) {
      const s = read();
      if (s) return s;
    }
    mkdirSync(join(file, '..'), { recursive: true });
    const secret = randomBytes(48).toString('base64url');
    try {
      // 'wx': two processes starting at once agree on whichever key was written first.
      writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: existsSync(file) ? 'w' : 'wx' });
      return secret;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return read();
      throw err;
    }
  } catch {
    return undefined;
  }
}
