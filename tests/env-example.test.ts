import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONFIG_VARIABLES, loadConfig } from '../src/config.js';

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');

/** `# NAME=value` lines of .env.example. */
const example = new Map(
  [...read('.env.example').matchAll(/^# ([A-Z][A-Z0-9_]*)=(.*)$/gm)].map((m) => [m[1], m[2].trim()] as [string, string]),
);

describe('.env.example', () => {
  it('lists every variable of docs/decisions.md §1', () => {
    const section = /## 1\. Running it([\s\S]*?)\n## 2\./.exec(read('docs/decisions.md'))![1];
    const table = section.split('\n').filter((l) => l.startsWith('| `'));
    const names = table.flatMap((row) => [...row.split('|')[1].matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]));
    expect(names.length).toBeGreaterThan(30);
    expect(names.filter((n) => !example.has(n))).toEqual([]);
  });

  it('lists every variable the config reads', () => {
    expect(CONFIG_VARIABLES).toContain('METRICS_PORT');
    expect(CONFIG_VARIABLES.filter((n) => !example.has(n))).toEqual([]);
  });

  it('shows the real default of each variable the config reads', () => {
    const defaults = loadConfig({}) as unknown as Record<string, unknown>;
    for (const [name, shown] of example) {
      if (!(name in defaults) || shown === '' || name === 'JWT_SECRET') continue;
      const parsed = loadConfig({ [name]: shown }) as unknown as Record<string, unknown>;
      expect({ name, value: parsed[name] }).toEqual({ name, value: defaults[name] });
    }
  });
});
