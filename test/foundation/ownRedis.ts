/** A redis-server of a test's own, on a port of its own: never the shared one. */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { waitFor } from '../wait.js';

/** Why a test of its own redis-server cannot run here, or false when it can. */
export function ownRedisSkipReason(redisUrl: string | null | undefined, noRedisReason: string): string | false {
  if (!redisUrl) return noRedisReason;
  return hasRedisServer() ? false : 'redis-server is not installed';
}

function hasRedisServer(): boolean {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** A private redis-server that can be stopped, started again on the same port, and frozen. */
export class OwnRedis {
  private child: ChildProcess | null = null;
  constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    const probe = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => {});
    try {
      await waitFor(
        'own redis-server',
        async () => {
          await probe.connect().catch(() => {});
          return (await probe.ping()) === 'PONG';
        },
        10_000,
        50,
      );
    } finally {
      probe.disconnect();
    }
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    this.child = null;
  }

  freeze(): void {
    this.child?.kill('SIGSTOP');
  }

  thaw(): void {
    this.child?.kill('SIGCONT');
  }
}
