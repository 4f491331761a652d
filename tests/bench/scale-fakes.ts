/**
 * The venue fakes of scale.bench.ts in a process of their own, so the bench's
 * CPU figures are the service's alone. Prints `{ type: 'ready', env }`, then
 * answers JSON lines on stdin: `arrivals` (request times per API, for the
 * budget check) and `quit`.
 */
import { createInterface } from 'node:readline';
import { startFakeVenues } from '../fakes/venues/index.js';
import { arrivalTimes } from '../fakes/venues/budget.js';

const size = JSON.parse(process.argv[2]) as { pmEvents: number; pmMarkets: number; ksEvents: number; ksMarkets: number; series: number };
const venues = await startFakeVenues(
  {},
  {
    generate: {
      polymarket: { events: size.pmEvents, markets: size.pmMarkets },
      kalshi: { events: size.ksEvents, markets: size.ksMarkets, series: size.series },
    },
  },
);
const say = (msg: object) => process.stdout.write(`${JSON.stringify(msg)}\n`);
say({ type: 'ready', env: venues.env });
createInterface({ input: process.stdin }).on('line', (line) => {
  const msg = JSON.parse(line) as { type: string };
  if (msg.type === 'arrivals') {
    say({
      type: 'arrivals',
      times: { gamma: arrivalTimes(venues.gamma), clob: arrivalTimes(venues.clob), kalshi: arrivalTimes(venues.kalshi) },
    });
  }
  if (msg.type === 'quit') void venues.close().then(() => process.exit(0));
});
