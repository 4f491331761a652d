import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { buildTestApp, type TestApp } from './helpers/app.js';

/**
 * deploy/grafana and deploy/prometheus (issue 35 §6) query metric names the
 * service really exports: every metric a dashboard panel or an alert rule
 * names is a family of a real scrape (histograms with their _bucket, _sum
 * and _count series). `promtool check rules` (CI, .ci/run) checks the rules'
 * syntax; this checks their vocabulary.
 */
const ROOT = new URL('..', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, ROOT), 'utf8');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Metric names in a PromQL expression: our prefix and prom-client's process/Node.js families. */
const namesIn = (expr: string) => [...expr.matchAll(/\b(?:predict|nodejs|process)_[a-z0-9_]+\b/g)].map((m) => m[0]);

let t: TestApp;
let exported: Set<string>;
beforeAll(async () => {
  const port = await freePort();
  t = await buildTestApp({ METRICS_PORT: String(port) });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  exported = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    exported.add(m[1]);
    if (m[2] === 'histogram') for (const s of ['_bucket', '_sum', '_count']) exported.add(m[1] + s);
    if (m[2] === 'summary') for (const s of ['_sum', '_count']) exported.add(m[1] + s);
  }
});
afterAll(async () => t?.close());

describe('deploy/: dashboard and alert rules', () => {
  it('every metric of this service carries the predict_ prefix (process and Node.js metrics keep their standard names)', () => {
    const own = [...exported].filter((n) => !/^(process|nodejs)_/.test(n));
    expect(own.length).toBeGreaterThan(10);
    for (const name of own) expect(name).toMatch(/^predict_/);
    expect(exported).toContain('predict_venue_data_last_update_timestamp_seconds');
    expect([...exported].some((n) => n.endsWith('_age_seconds'))).toBe(false);
  });

  it('the Grafana dashboard queries only exported metrics', () => {
    const dashboard = JSON.parse(read('deploy/grafana/predict-backend.json')) as {
      panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
    };
    expect(dashboard.panels.length).toBeGreaterThanOrEqual(10);
    for (const panel of dashboard.panels) {
      for (const target of panel.targets) {
        const names = namesIn(target.expr);
        expect(names.length, `${panel.title}: ${target.expr}`).toBeGreaterThan(0);
        for (const name of names) expect(exported, `${panel.title}: ${name}`).toContain(name);
      }
    }
  });

  it('the Prometheus alert rules cover the issue’s cases and name only exported metrics', () => {
    const rules = (
      parse(read('deploy/prometheus/alerts.yml')) as { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> }
    ).groups.flatMap((g) => g.rules);
    const byName = Object.fromEntries(rules.map((r) => [r.alert, r.expr]));
    expect(Object.keys(byName)).toEqual(
      expect.arrayContaining([
        'PredictVenuePricesStale',
        'PredictVenueEventsStale',
        'PredictLeaderboardStale',
        'PredictJobFailingRepeatedly',
        'PredictDeadLettersGrowing',
        'PredictPushChannelPaused',
        'PredictHighServerErrorRate',
        'PredictEventLoopLag',
      ]),
    );
    for (const rule of rules) {
      const names = namesIn(rule.expr);
      expect(names.length, rule.alert).toBeGreaterThan(0);
      for (const name of names) expect(exported, `${rule.alert}: ${name}`).toContain(name);
    }
  });
});
