import type { AppContext } from '../context.js';
import type { Job } from './worker.js';

/** The jobs a worker process runs. */
export function createJobs(_ctx: AppContext): Job[] {
  return [];
}
