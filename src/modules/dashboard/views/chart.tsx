/**
 * Bar charts as inline SVG, drawn on the server: no chart library, no script, nothing
 * fetched. Colours come from the stylesheet (classes s0…s2), which the CSP allows.
 */
import { escapeHtml } from '@kitajs/html';

export interface Series {
  label: string;
  values: number[];
}

export interface ChartOptions {
  id: string;
  title: string;
  labels: string[];
  series: Series[];
  format: (value: number) => string;
  /** Shorter labels for the y-axis (`$1.2M`); `format` when absent. */
  axisFormat?: (value: number) => string;
}

const WIDTH = 800;
const HEIGHT = 260;
/** Room for the y-axis labels; wider when the longest label needs it (full amounts such as `$12,000.00`). */
const MIN_LEFT = 78;
/** Between a y-axis label and the plot, and around the chart's edge. */
const AXIS_GAP = 6;
const RIGHT = 10;
const TOP = 12;
const BOTTOM = 34;
const TICKS = 4;
/** Beyond this many x labels they would overlap; every n-th is shown instead. */
const MAX_X_LABELS = 12;
/** A few wide bars would look like blocks; beyond this they get more air instead. */
const MAX_BAR_WIDTH = 36;
/** Space kept between neighbouring x labels, in viewBox units. */
const LABEL_GAP = 8;

/**
 * The width of `c` at the axis font size (14 px) in viewBox units, erring wide: the system
 * font differs by platform (DejaVu Sans, among the widest, on Linux), and a label guessed too
 * narrow is clipped by the chart's edge or runs into its neighbour.
 */
function charWidth(c: string): number {
  if ('MWmw@'.includes(c)) return 14;
  if ("ijlI.,:;'|!·".includes(c) || c === ' ') return 4.5;
  if ('frt()[]'.includes(c)) return 6.5;
  if (/[A-Z%&]/.test(c)) return 11;
  if (/[a-z0-9$#+\-/]/.test(c)) return 9;
  // Letters of other scripts: CJK and the like are a full em.
  return c.charCodeAt(0) >= 0x2e80 ? 15 : 11;
}

function textWidth(text: string): number {
  let width = 0;
  for (const c of text) width += charWidth(c);
  return width;
}

const ELLIPSIS = '…';

/** `label` cut with an ellipsis to fit `width` viewBox units, so neighbours never overlap. */
function fitted(label: string, width: number): string {
  if (textWidth(label) <= width) return label;
  let kept = '';
  let used = charWidth('M');
  for (const c of label) {
    if (used + charWidth(c) > width) break;
    kept += c;
    used += charWidth(c);
  }
  return `${kept.trimEnd()}${ELLIPSIS}`;
}

/** An x-axis label: cut to its room, the full text in a tooltip (`<title>`) when cut. */
function XLabel({ label, center, room }: { label: string; center: number; room: number }) {
  const shown = fitted(label, room);
  // Kept inside the chart: the last day's label would otherwise hang over the right edge.
  const half = textWidth(shown) / 2;
  const x = Math.min(Math.max(center, half + AXIS_GAP), WIDTH - half - AXIS_GAP);
  return (
    <text class="axis" x={x.toFixed(1)} y={HEIGHT - 12} text-anchor="middle">
      {shown === label ? '' : <title safe>{label}</title>}
      {escapeHtml(shown)}
    </text>
  );
}

/** A round step (1, 2 or 5 × 10^k) that splits `range` into about TICKS parts. */
function niceStep(range: number): number {
  const raw = range / TICKS;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
  return step ?? 10 * power;
}

export function BarChart(options: ChartOptions) {
  const { labels, series } = options;
  const all = series.flatMap((s) => s.values);
  const step = niceStep(Math.max(1, Math.max(0, ...all) - Math.min(0, ...all)));
  const top = Math.max(step, Math.ceil(Math.max(0, ...all) / step) * step);
  const bottom = Math.floor(Math.min(0, ...all) / step) * step;
  const ticks: Array<[value: number, label: string]> = [];
  for (let v = bottom; v <= top + step / 2; v += step) ticks.push([v, (options.axisFormat ?? options.format)(v)]);
  const LEFT = Math.max(MIN_LEFT, Math.ceil(Math.max(...ticks.map(([, t]) => textWidth(t)))) + 2 * AXIS_GAP);
  const plotW = WIDTH - LEFT - RIGHT;
  const plotH = HEIGHT - TOP - BOTTOM;
  const y = (v: number) => TOP + ((top - v) / (top - bottom)) * plotH;
  const groupW = plotW / Math.max(1, labels.length);
  const barW = Math.min(MAX_BAR_WIDTH, Math.max(1, (groupW * 0.78) / Math.max(1, series.length)));
  const every = Math.ceil(labels.length / MAX_X_LABELS);

  const grid = ticks.map(([v, label]) => (
    <>
      <line class="grid-line" x1={LEFT} x2={WIDTH - RIGHT} y1={y(v).toFixed(1)} y2={y(v).toFixed(1)} />
      <text class="axis" x={LEFT - AXIS_GAP} y={(y(v) + 4).toFixed(1)} text-anchor="end" safe>
        {label}
      </text>
    </>
  ));
  const bars = labels.map((label, i) => {
    const x0 = LEFT + (i + 0.5) * groupW - (barW * series.length) / 2;
    return (
      <>
        {series.map((s, k) => {
          const v = s.values[i] ?? 0;
          const y1 = Math.min(y(v), y(0));
          const h = Math.max(v === 0 ? 0 : 1, Math.abs(y(v) - y(0)));
          return (
            <rect
              class={`s${k}`}
              x={(x0 + k * barW).toFixed(1)}
              y={y1.toFixed(1)}
              width={(barW - 1).toFixed(1)}
              height={h.toFixed(1)}
            >
              <title safe>
                {label} · {s.label}: {options.format(v)}
              </title>
            </rect>
          );
        })}
        {i % every === 0 ? (
          <XLabel label={label} center={LEFT + (i + 0.5) * groupW} room={groupW * every - LABEL_GAP} />
        ) : (
          ''
        )}
      </>
    );
  });

  const totals = series.map((s) => `${s.label} total ${options.format(s.values.reduce((a, b) => a + b, 0))}`);
  const description = `${labels.length} bars per series. ${totals.join('; ')}.`;
  return (
    <figure class="panel">
      <figcaption id={`${options.id}-title`}>
        <strong safe>{options.title}</strong>
      </figcaption>
      <ul class="legend">
        {series.map((s, k) => (
          <li>
            <span class={`s${k}`}></span>
            {escapeHtml(s.label)}
          </li>
        ))}
      </ul>
      {/* On a phone the chart keeps a legible size and scrolls sideways instead of shrinking. */}
      <section class="chart-scroll" tabindex="0" aria-label={options.title}>
        {/* biome-ignore lint/a11y/noSvgWithoutTitle: named by aria-labelledby: the caption above and the description inside */}
        <svg
          class="chart"
          viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
          role="img"
          aria-labelledby={`${options.id}-title ${options.id}-desc`}
        >
          <desc id={`${options.id}-desc`} safe>
            {description}
          </desc>
          {grid}
          <line class="grid-line" x1={LEFT} x2={WIDTH - RIGHT} y1={y(0).toFixed(1)} y2={y(0).toFixed(1)} />
          {bars}
        </svg>
      </section>
    </figure>
  );
}
