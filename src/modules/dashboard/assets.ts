/** The dashboard's stylesheet, script and icon: the files in ./assets/, served at /dashboard/assets/. */
import { hashedAssets } from '../../web/assets.js';

export const dashboardAssets = hashedAssets(new URL('./assets/', import.meta.url), '/dashboard/assets', [
  'app.css',
  'app.js',
  'icon.svg',
]);
