/** Loopback ports for the tests and benchmarks that start servers of their own. */
import { createServer } from 'node:net';

/**
 * A port nobody listens on right now (bind port 0, read it, close), for a process that must
 * be told its port before it starts. Anything that can listen on port 0 itself should.
 */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
