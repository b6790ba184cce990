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
const LEFT = 78;
const RIGHT = 10;
const TOP = 12;
const BOTTOM = 34;
const TICKS = 4;
/** Beyond this many x labels they would overlap; every n-th is shown instead. */
const MAX_X_LABELS = 12;
/** A few wide bars would look like blocks; beyond this they get more air instead. */
const MAX_BAR_WIDTH = 36;
/** Width of an axis character at the axis font size (14 px), in viewBox units. */
const AXIS_CHAR_WIDTH = 8;

/** `label` cut with an ellipsis to fit `width` viewBox units, so neighbours never overlap. */
function fitted(label: string, width: number): string {
  const chars = Math.max(1, Math.floor(width / AXIS_CHAR_WIDTH) - 1);
  return label.length <= chars ? label : `${label.slice(0, Math.max(1, chars - 1))}…`;
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
  const plotW = WIDTH - LEFT - RIGHT;
  const plotH = HEIGHT - TOP - BOTTOM;
  const y = (v: number) => TOP + ((top - v) / (top - bottom)) * plotH;
  const groupW = plotW / Math.max(1, labels.length);
  const barW = Math.min(MAX_BAR_WIDTH, Math.max(1, (groupW * 0.78) / Math.max(1, series.length)));
  const every = Math.ceil(labels.length / MAX_X_LABELS);

  const grid: JSX.Element[] = [];
  for (let v = bottom; v <= top + step / 2; v += step) {
    grid.push(
      <>
        <line class="grid-line" x1={LEFT} x2={WIDTH - RIGHT} y1={y(v).toFixed(1)} y2={y(v).toFixed(1)} />
        <text class="axis" x={LEFT - 6} y={(y(v) + 4).toFixed(1)} text-anchor="end" safe>
          {(options.axisFormat ?? options.format)(v)}
        </text>
      </>,
    );
  }
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
          <text class="axis" x={(LEFT + (i + 0.5) * groupW).toFixed(1)} y={HEIGHT - 12} text-anchor="middle" safe>
            {fitted(label, groupW * every)}
          </text>
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
