/**
 * A report's query checked as a whole: its groupBy, its days and its dimension filters
 * (filters.ts). Every broken rule is collected before anything is refused, together with the
 * problems the route's schema found, so one 422 lists them all (README, "Every problem at
 * once"): `?groupBy=foo&country=XX&from=2026-02-30&hour=99` names all four parameters.
 *
 * A parameter the schema refused is not checked again (its value may not even be text), and
 * the checks that compare two parameters (from after to, the range's length) run only when
 * both passed on their own: "must not be after to" beside "to: is not a calendar date" would
 * compare with a day that does not exist.
 */
import { addDays, daysBetween, formatDay, isRealDay, parseDay } from '../../calendar.js';
import { InvalidError, type Problem } from '../../errors.js';
import type { Attribute } from '../analytics/dimensions.js';
import { dimensionFilters } from './filters.js';
import { GROUP_KEYS, type GroupKey, MAX_GROUP_KEYS, MAX_RANGE_DAYS, type ReportQuery, TIME_KEYS } from './schemas.js';

const DEFAULT_RANGE_DAYS = 30;

export const isTimeKey = (k: string): k is (typeof TIME_KEYS)[number] => (TIME_KEYS as readonly string[]).includes(k);

export interface CheckedQuery {
  groupBy: GroupKey[];
  from: string;
  to: string;
  /** Dimension filters in their stored spelling. */
  filters: Partial<Record<Attribute, string>>;
}

/**
 * The query checked against `today` (the brand's, for the default range); throws one
 * InvalidError listing `refused` (the schema's problems, first) and every rule the query
 * breaks besides.
 */
export function checkReportQuery(query: ReportQuery, today: string, refused: readonly Problem[] = []): CheckedQuery {
  const refusedPaths = new Set(refused.map((p) => p.path));
  const usable = Object.fromEntries(
    Object.entries(query).filter(([name]) => !refusedPaths.has(`query.${name}`)),
  ) as ReportQuery;
  const problems: Problem[] = [...refused];
  const groupBy = groupKeys(usable.groupBy, problems);
  const range = dayRange(usable, today, refusedPaths, problems);
  const filters = dimensionFilters(usable, problems);
  if (problems.length > 0) throw new InvalidError(problems);
  return { groupBy, ...range, filters };
}

function groupKeys(text: string | undefined, problems: Problem[]): GroupKey[] {
  if (!text) return [];
  const keys = text
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean);
  const found = problems.length;
  const problem = (message: string) => problems.push({ path: 'query.groupBy', message });
  const unknown = keys.filter((k) => !GROUP_KEYS.includes(k as GroupKey));
  if (unknown.length > 0) problem(`unknown grouping ${unknown.join(', ')}; use ${GROUP_KEYS.join(', ')}`);
  if (new Set(keys).size !== keys.length) problem('lists a grouping twice');
  if (keys.filter(isTimeKey).length > 1) problem('use at most one of day, week, month');
  if (keys.length > MAX_GROUP_KEYS) {
    problem(`group by at most ${MAX_GROUP_KEYS} dimensions at once (got ${keys.length})`);
  }
  return problems.length === found ? (keys as GroupKey[]) : [];
}

/** The query's day range; defaults to the 30 brand-local days ending today. */
function dayRange(
  query: ReportQuery,
  today: string,
  refusedPaths: ReadonlySet<string>,
  problems: Problem[],
): { from: string; to: string } {
  const to = query.to ?? today;
  const from = query.from ?? formatDay(addDays(parseDay(to), 1 - DEFAULT_RANGE_DAYS));
  const fromReal = isRealDay(from);
  const toReal = isRealDay(to);
  // A default `from` counts back from `to`: only a `from` given can be wrong on its own.
  if (query.from !== undefined && !fromReal) problems.push({ path: 'query.from', message: 'is not a calendar date' });
  if (!toReal) problems.push({ path: 'query.to', message: 'is not a calendar date' });
  const comparable = fromReal && toReal && !refusedPaths.has('query.from') && !refusedPaths.has('query.to');
  if (comparable && from > to) problems.push({ path: 'query.from', message: 'must not be after to' });
  // Counted in days, not compared as text: '10001-…' sorts before '9999-…'.
  else if (comparable && daysBetween(parseDay(from), parseDay(to)) > MAX_RANGE_DAYS) {
    problems.push({ path: 'query.to', message: `may be at most ${MAX_RANGE_DAYS} days after from` });
  }
  return { from, to };
}
