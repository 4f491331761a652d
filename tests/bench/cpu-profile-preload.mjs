/**
 * `NODE_OPTIONS=--import=<this file>`: a CPU profile of a process started
 * through npm, where `--cpu-prof` is not allowed in NODE_OPTIONS (issue 36's
 * realistic bench). Profiles only the process whose argv names src/server or
 * dist/src/server (not npm itself); writes CPU_PROFILE_DIR/<pid>.cpuprofile
 * when the process exits.
 */
import { Session } from 'node:inspector';
import process from 'node:process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

if (process.argv.some((a) => /(^|\/)src\/server\.(ts|js)$/.test(a))) {
  const dir = process.env.CPU_PROFILE_DIR ?? 'tests/bench/.tmp/profiles';
  const session = new Session();
  session.connect();
  session.post('Profiler.setSamplingInterval', { interval: 500 });
  session.post('Profiler.enable');
  session.post('Profiler.start');
  process.once('exit', () => {
    // Same-thread inspector sessions answer synchronously, so this completes before the process ends.
    session.post('Profiler.stop', (err, res) => {
      if (err) return;
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `${process.pid}.cpuprofile`), JSON.stringify(res.profile));
    });
  });
}
