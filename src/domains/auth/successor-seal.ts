import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * docs/decisions.md §10.3: during the reuse grace window the successor refresh
 * token is kept so that a second presentation of its predecessor can be
 * answered with the same successor. It is kept encrypted (AES-256-GCM, key
 * derived from JWT_SECRET with HKDF), bound to the predecessor's hash so a
 * sealed value means nothing on another row. JWT_SECRET_PREVIOUS still opens
 * values sealed before a key rotation.
 */
export interface SuccessorSeal {
  seal(successor: string, predecessorHash: string): string;
  open(sealed: string, predecessorHash: string): string | undefined;
}

const INFO = 'refresh-successor-v1';

function deriveKey(secret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, 'docs/decisions.md §10.3', INFO, 32));
}

export function createSuccessorSeal(secret: string, previous?: string): SuccessorSeal {
  const keys = [deriveKey(secret), ...(previous ? [deriveKey(previous)] : [])];
  return {
    seal(successor, predecessorHash) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', keys[0], iv);
      cipher.setAAD(Buffer.from(predecessorHash));
      const body = Buffer.concat([cipher.update(successor, 'utf8'), cipher.final()]);
      return Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url');
    },
    open(sealed, predecessorHash) {
      const raw = Buffer.from(sealed, 'base64url');
      if (raw.length < 12 + 16 + 1) return undefined;
      const iv = raw.subarray(0, 12);
      const tag = raw.subarray(raw.length - 16);
      const body = raw.subarray(12, raw.length - 16);
      for (const key of keys) {
        try {
          const decipher = createDecipheriv('aes-256-gcm', key, iv);
          decipher.setAAD(Buffer.from(predecessorHash));
          decipher.setAuthTag(tag);
          return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
        } catch {
          // wrong key (sealed before a rotation of JWT_SECRET) or tampered: try the next
        }
      }
      return undefined;
    },
  };
}
