import { createServer, type AddressInfo } from 'node:net';

/** A loopback TCP port that was free a moment ago (for servers that cannot listen on port 0, e.g. METRICS_PORT). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}
