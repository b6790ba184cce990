/** `npm run bench`: every benchmark in turn, then one report (bench/results/latest.{json,md}). */
import { benchAnalytics } from './analytics.js';
import { benchApiAuth } from './apiAuth.js';
import { benchConversionIngest } from './conversionIngest.js';
import { benchDashboard } from './dashboard.js';
import { writeReport } from './lib.js';
import { benchReports } from './reports.js';
import { benchRetention } from './retention.js';
import { benchSoak } from './soak.js';
import { benchTracking } from './tracking.js';
import { benchWebhooks } from './webhooks.js';

const only = process.argv[2];
const benchmarks: Record<string, () => Promise<void>> = {
  'api-auth': benchApiAuth,
  'conversion-ingest': benchConversionIngest,
  reports: benchReports,
  analytics: benchAnalytics,
  retention: benchRetention,
  dashboard: benchDashboard,
  webhooks: benchWebhooks,
  tracking: benchTracking,
  soak: benchSoak,
};

for (const [name, run] of Object.entries(benchmarks)) {
  if (only && only !== name) continue;
  await run();
}
writeReport();
