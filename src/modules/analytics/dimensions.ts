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

/**
 * Attributes whose values come from a fixed vocabulary (about 250 countries, five device
 * types, the OS and browser names ua-parser knows, 24 hours). Their pairs are rolled up too
 * (fold.ts): a pair's rows per day are bounded by the product of the vocabularies, however
 * much traffic there is. The free-form ones (referrer host, sub1–sub5) are not paired: their
 * combinations grow with the traffic, so a pair rollup would be as large as the facts.
 */
export const PAIRED_ATTRIBUTES = [
  'country',
  'deviceType',
  'os',
  'browser',
  'hour',
] as const satisfies readonly Attribute[];

/** Every pair of paired attributes, each in the order of ATTRIBUTES (as stored). */
export const PAIRS: ReadonlyArray<readonly [Attribute, Attribute]> = PAIRED_ATTRIBUTES.flatMap((a, i) =>
  PAIRED_ATTRIBUTES.slice(i + 1).map((b) => [a, b] as const),
);

/** The pair rollup covering exactly `attributes`, in stored order, if there is one. */
export function pairOf(attributes: readonly Attribute[]): readonly [Attribute, Attribute] | undefined {
  if (attributes.length !== 2) return undefined;
  return PAIRS.find(([a, b]) => attributes.includes(a) && attributes.includes(b));
}
