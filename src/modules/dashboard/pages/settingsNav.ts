/** The tab strip shared by the three settings pages. */
import { tabs } from '../components.js';

export function settingsTabs(current: 'general' | 'keys' | 'blocklist') {
  return tabs('Settings', [
    { href: '/dashboard/settings', text: 'Brand', current: current === 'general' },
    { href: '/dashboard/settings/api-keys', text: 'API keys', current: current === 'keys' },
    { href: '/dashboard/settings/blocklist', text: 'Fraud blocklist', current: current === 'blocklist' },
  ]);
}
