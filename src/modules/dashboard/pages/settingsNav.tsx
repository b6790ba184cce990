/** The tab strip shared by the three settings pages. */
import { Tabs } from '../views/components.js';

export function SettingsTabs({ current }: { current: 'general' | 'keys' | 'blocklist' }) {
  return (
    <Tabs
      label="Settings"
      items={[
        { href: '/dashboard/settings', text: 'Brand', current: current === 'general' },
        { href: '/dashboard/settings/api-keys', text: 'API keys', current: current === 'keys' },
        { href: '/dashboard/settings/blocklist', text: 'Fraud blocklist', current: current === 'blocklist' },
      ]}
    />
  );
}
