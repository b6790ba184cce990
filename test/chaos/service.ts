/**
 * The real service as a child process (`src/cli.ts serve`) that can be killed with SIGKILL
 * and restarted, and the CLI run the same way.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { sleep } from '../wait.js';

const run = promisify(execFile);

export const ROOT = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const CLI = path.join(ROOT, 'src/cli.ts');

const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

/** Environment of a child: ours minus test-runner and database variables, plus `env`. */
function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['NODE_TEST_CONTEXT', 'DATABASE_URL', 'REDIS_URL', 'PORT', 'DATA_DIR']) delete base[name];
  return { ...base, ...env };
}

/** Runs `affitrack <args> --json` and returns the one JSON object it prints. */
// biome-ignore lint/suspicious/noExplicitAny: the CLI's JSON output, read field by field by the tests
export async function cli(env: Record<string, string>, ...args: string[]): Promise<any> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', CLI, ...args, '--json'], {
    cwd: ROOT,
    env: childEnv({ LOG_LEVEL: 'warn', ...env }),
    timeout: 60_000,
  });
  return JSON.parse(stdout.trim());
}

export type Role = 'all' | 'api' | 'worker';

/** One `affitrack serve` process that can be started, killed (-9) and started again. */
export class ServiceProcess {
  child: ChildProcess | null = null;
  starts = 0;
  kills = 0;
  /** How long each start took until ready (ms). */
  readonly startMs: number[] = [];
  /** The last lines of its output, for failure messages. */
  readonly tail: string[] = [];
  /** Counts of warn/error log messages over every run (`msg` → n). */
  readonly problems = new Map<string, number>();
  /** Exits nobody asked for (crashes), with the output tail at that moment. */
  readonly crashes: string[] = [];
  private exited: Promise<void> = Promise.resolve();
  private stopping = false;
  private startedLine: (() => void) | null = null;

  constructor(
    readonly name: string,
    readonly env: Record<string, string>,
    readonly role: Role,
    readonly port: number,
  ) {}

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== null;
  }

  /** Spawns the process and waits until it serves /ready (API roles) or says it started (worker). */
  async start(timeoutMs = 40_000): Promise<void> {
    if (this.child) throw new Error(`${this.name} is already running`);
    const started = Date.now();
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'serve', '--role', this.role], {
      cwd: ROOT,
      env: childEnv({
        PORT: String(this.port),
        HOST: '127.0.0.1',
        // The worker says "affitrack started" at info; API processes log every request at info.
        LOG_LEVEL: this.role === 'worker' ? 'info' : 'warn',
        ...this.env,
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    this.stopping = false;
    this.starts += 1;
    children.add(child);
    this.exited = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        children.delete(child);
        if (this.child === child) this.child = null;
        this.remember(`[${this.name} exited code=${code} signal=${signal}]`);
        if (!this.stopping) {
          const cause = this.tail.find((l) => /^\s*(\w*Error|error)\b.*:/.test(l)) ?? '';
          const sqlState = this.tail.find((l) => /^\s*code: '/.test(l))?.trim() ?? '';
          this.crashes.push(
            `${this.name} exited by itself (code=${code} signal=${signal}): ${cause.trim()} ${sqlState}`,
          );
          console.log(`${this.name} exited by itself (code=${code} signal=${signal}):\n${this.tail.join('\n')}`);
        }
        resolve();
      });
    });
    const onData = (stream: NodeJS.ReadableStream) => {
      let buffer = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        buffer += chunk;
        let newline = buffer.indexOf('\n');
        while (newline >= 0) {
          this.line(buffer.slice(0, newline));
          buffer = buffer.slice(newline + 1);
          newline = buffer.indexOf('\n');
        }
      });
    };
    if (child.stdout) onData(child.stdout);
    if (child.stderr) onData(child.stderr);

    const startedSignal = new Promise<void>((resolve) => {
      this.startedLine = resolve;
    });
    const deadline = started + timeoutMs;
    if (this.role === 'worker') {
      const timer = sleep(timeoutMs).then(() => 'timeout' as const);
      const outcome = await Promise.race([
        startedSignal.then(() => 'ok' as const),
        this.exited.then(() => 'exit' as const),
        timer,
      ]);
      if (outcome !== 'ok') throw new Error(`${this.name} did not start (${outcome}):\n${this.tail.join('\n')}`);
      this.startMs.push(Date.now() - started);
      return;
    }
    for (;;) {
      if (!this.child) throw new Error(`${this.name} exited during start-up:\n${this.tail.join('\n')}`);
      try {
        const response = await fetch(`${this.baseUrl}/ready`, { signal: AbortSignal.timeout(2000) });
        if (response.status === 200) {
          this.startMs.push(Date.now() - started);
          return;
        }
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline)
        throw new Error(`${this.name} not ready after ${timeoutMs} ms:\n${this.tail.join('\n')}`);
      await sleep(100);
    }
  }

  /** kill -9, and wait until it is gone. */
  async kill9(): Promise<void> {
    if (!this.child) return;
    this.kills += 1;
    this.stopping = true;
    this.child.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM (graceful), SIGKILL if it lingers. */
  async stop(graceMs = 10_000): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.stopping = true;
    child.kill('SIGTERM');
    const timedOut = await Promise.race([this.exited.then(() => false), sleep(graceMs).then(() => true)]);
    if (timedOut) {
      child.kill('SIGKILL');
      await this.exited;
    }
  }

  private line(text: string): void {
    this.remember(text);
    if (text.includes('"affitrack started"')) this.startedLine?.();
    if (!text.startsWith('{')) return;
    try {
      const entry = JSON.parse(text) as { level?: number; msg?: string; err?: { message?: string } };
      if ((entry.level ?? 0) >= 40) {
        const cause = entry.err?.message ? `: ${entry.err.message.split('\n')[0]?.slice(0, 160)}` : '';
        const msg = `${entry.msg ?? '?'}${cause}`;
        this.problems.set(msg, (this.problems.get(msg) ?? 0) + 1);
      }
    } catch {
      // not a log line
    }
  }

  private remember(text: string): void {
    this.tail.push(text.length > 600 ? `${text.slice(0, 600)}…` : text);
    if (this.tail.length > 40) this.tail.shift();
  }
}
