/**
 * Part of `npm run build`: tsc compiles the code, this copies the static files it serves
 * (every `assets/` folder under src/: stylesheets, scripts, icons) to the same place in dist/.
 */
import { cpSync, readdirSync } from 'node:fs';
import path from 'node:path';

const SOURCE = 'src';
const TARGET = 'dist';

for (const entry of readdirSync(SOURCE, { recursive: true, withFileTypes: true })) {
  if (!entry.isDirectory() || entry.name !== 'assets') continue;
  const from = path.join(entry.parentPath, entry.name);
  cpSync(from, path.join(TARGET, path.relative(SOURCE, from)), { recursive: true });
}
