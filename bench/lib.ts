/** Shared pieces of the benchmarks: child processes, autocannon runs and the result table. */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import autocannon from 'autocannon';

export const ROOT = path.resolve(import.meta.dirname, '..');
const execFileAsync = promisify(execFile);

/** Every benchmark server listens on a port free at its start: runs never collide with each other or with tests. */
export { freePort } from '../test/net.js';

export interface Figure {
  benchmark: string;
  metric: string;
  value: number;
  unit: string;
  baseline?: number;
  ratio?: number;
  target?: string;
  pass?: boolean;
  dialect?: string;
}

export const figures: Figure[] = [];

export function record(figure: Figure): void {
  figures.push(figure);
  const extra =
    figure.baseline !== undefined ? `  (baseline ${fmt(figure.baseline)}, ratio ${fmt(figure.ratio ?? 0)})` : '';
  const verdict = figure.pass === undefined ? '' : figure.pass ? '  PASS' : '  MISS';
  console.log(`  ${figure.benchmark} · ${figure.metric}: ${fmt(figure.value)} ${figure.unit}${extra}${verdict}`);
}

function fmt(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(n < 10 ? 3 : 1);
}

/** p-th percentile (0–100) of ascending `sorted` values; NaN when empty. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

/** Resident set size of process `pid` in MB (VmRSS, or VmHWM for the peak). */
export function rssMb(pid: number, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1];
    if (kb) return Number(kb) / 1024;
  } catch {}
  if (field === 'VmHWM') return Number.NaN;
  return Number(execFileSync('ps', ['-o', 'rss=', '-p', String(pid)], { encoding: 'utf8' }).trim()) / 1024;
}

/**
 * A brand and an API key made through the CLI. The key's rate limit is lifted by
 * configuration (a per-key limit), so the limiter still runs on every request exactly as
 * in production.
 */
export async function createBenchBrand(
  name: string,
  env: Record<string, string>,
): Promise<{ brandId: string; apiKey: string }> {
  const brand = JSON.parse(await cli(['brands', 'create', '--name', name, '--json'], env));
  const key = JSON.parse(
    await cli(['keys', 'create', '--brand', brand.brand.id, '--rate-limit', '100000000', '--json'], env),
  );
  return { brandId: brand.brand.id, apiKey: key.apiKey };
}

export async function cli(args: string[], env: Record<string, string>): Promise<string> {
  const { stdout } = await execFileAsync(process.execPath, [path.join(ROOT, 'dist/cli.js'), ...args], {
    env: { ...process.env, ...env },
  });
  return stdout;
}

/** Starts a node process and resolves once `readyUrl` answers. */
export async function startProcess(
  args: string[],
  env: Record<string, string>,
  readyUrl: string,
): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(readyUrl);
      if (res.ok) return child;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`process did not become ready: ${args.join(' ')}`);
}

export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
  if (child.exitCode === null) child.kill('SIGKILL');
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  total: number;
  non2xx: number;
  errors: number;
}

export async function load(options: autocannon.Options): Promise<LoadResult> {
  const result = await autocannon({ connections: 50, duration: 5, ...options });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    total: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

export function writeReport(): void {
  const dir = path.join(ROOT, 'bench/results');
  mkdirSync(dir, { recursive: true });
  const at = new Date().toISOString();
  writeFileSync(path.join(dir, 'latest.json'), `${JSON.stringify({ at, node: process.version, figures }, null, 2)}\n`);
  const rows = figures.map(
    (f) =>
      `| ${f.benchmark} | ${f.dialect ?? ''} | ${f.metric} | ${fmt(f.value)} ${f.unit} | ${f.baseline === undefined ? '' : fmt(f.baseline)} | ${f.ratio === undefined ? '' : fmt(f.ratio)} | ${f.target ?? ''} | ${f.pass === undefined ? '' : f.pass ? 'pass' : 'miss'} |`,
  );
  const table = [
    `# Benchmark results (${at}, Node ${process.version})`,
    '',
    '| benchmark | dialect | metric | value | baseline | ratio | target | verdict |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
  ].join('\n');
  writeFileSync(path.join(dir, 'latest.md'), table);
  console.log(`\n${table}`);
}
