/**
 * The attributes a report can be split or filtered by besides time, offer and partner:
 * their API names and the fact/click column each one reads.
 */
export const ATTRIBUTES = [
  'country',
  'deviceType',
  'os',
  'browser',
  'referrerHost',
  'sub1',
  'sub2',
  'sub3',
  'sub4',
  'sub5',
  'hour',
] as const;
export type Attribute = (typeof ATTRIBUTES)[number];

export const ATTRIBUTE_COLUMN = {
  country: 'country',
  deviceType: 'device_type',
  os: 'os',
  browser: 'browser',
  referrerHost: 'referrer_host',
  sub1: 'sub1',
  sub2: 'sub2',
  sub3: 'sub3',
  sub4: 'sub4',
  sub5: 'sub5',
  hour: 'hour',
} as const satisfies Record<Attribute, string>;

export function isAttribute(name: string): name is Attribute {
  return (ATTRIBUTES as readonly string[]).includes(name);
}

export const DEVICE_TYPES = ['desktop', 'mobile', 'tablet', 'bot', 'other'] as const;
export type DeviceType = (typeof DEVICE_TYPES)[number];
