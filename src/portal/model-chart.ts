// The Models page's chart of a training's validation CER per epoch (docs/portal.md, "Models"):
// an inline SVG drawn on the server from the model's progress history, no chart library and no
// script. Styled by class (portal.css) and presentation attributes only, as the pages' CSP allows
// no inline style; a title, a description and a point title per epoch say it to a screen reader.
import { html, type Html } from './html.ts';

const WIDTH = 560;
const HEIGHT = 220;
const LEFT = 56;
const RIGHT = 16;
const TOP = 14;
const BOTTOM = 40;

export interface ChartPoint {
  epoch: number;
  validation_cer: number;
}

/** A CER (0.123) as a page shows it: `12.3 %`. */
export const percent = (value: number): string => `${(value * 100).toFixed(1)} %`;

/** The scale's ticks: 0 to the highest CER rounded up, in 2 to 5 round steps (1 %, 2 %, 2.5 %, 5 %…). */
function scaleTicks(points: readonly ChartPoint[]): number[] {
  const highest = Math.max(...points.map((point) => point.validation_cer), 0.01);
  const step = [0.005, 0.01, 0.02, 0.025, 0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10].find((candidate) => highest / candidate <= 5) ?? 100;
  const count = Math.max(1, Math.ceil(highest / step - 1e-9));
  return Array.from({ length: count + 1 }, (_, index) => index * step);
}

/** A tick's label: `35 %`, `2.5 %`. */
const tickLabel = (value: number): string => `${Number((value * 100).toFixed(1))} %`;

/** The chart, or nothing before the first epoch. Epochs in order, as recorded (they only grow). */
export function validationCerChart(points: readonly ChartPoint[], id = 'cer-chart'): Html {
  if (points.length === 0) return html``;
  const yTicks = scaleTicks(points);
  const top = yTicks[yTicks.length - 1];
  const first = points[0].epoch;
  const last = points[points.length - 1].epoch;
  const plotWidth = WIDTH - LEFT - RIGHT;
  const plotHeight = HEIGHT - TOP - BOTTOM;
  const x = (epoch: number) => (last === first ? LEFT + plotWidth / 2 : LEFT + ((epoch - first) / (last - first)) * plotWidth);
  const y = (cer: number) => TOP + plotHeight - (Math.min(cer, top) / top) * plotHeight;
  const round = (value: number) => Math.round(value * 10) / 10;
  const xStep = Math.max(1, Math.ceil((last - first + 1) / 10));
  const xTicks = points.filter((point, index) => index === points.length - 1 || (point.epoch - first) % xStep === 0);
  const best = points.reduce((lowest, point) => (point.validation_cer < lowest.validation_cer ? point : lowest));
  const line = points.map((point) => `${round(x(point.epoch))},${round(y(point.validation_cer))}`).join(' ');
  const description =
    `${points.length} epoch${points.length === 1 ? '' : 's'}: validation CER ${percent(points[0].validation_cer)} after epoch ${first}, ` +
    `${percent(points[points.length - 1].validation_cer)} after epoch ${last}, lowest ${percent(best.validation_cer)} (epoch ${best.epoch}).`;
  return html`<figure class="chart"><svg viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" role="img" aria-labelledby="${id}-title ${id}-desc">
<title id="${id}-title">Validation CER per epoch</title><desc id="${id}-desc">${description}</desc>
${yTicks.map(
  (tick) =>
    html`<line class="grid" x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${round(y(tick))}" y2="${round(y(tick))}"/><text class="tick" x="${LEFT - 6}" y="${round(y(tick)) + 4}" text-anchor="end">${tickLabel(tick)}</text>`,
)}
${xTicks.map(
  (point) => html`<text class="tick" x="${round(x(point.epoch))}" y="${HEIGHT - BOTTOM + 16}" text-anchor="middle">${point.epoch}</text>`,
)}
<line class="axis" x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${TOP + plotHeight}" y2="${TOP + plotHeight}"/><line class="axis" x1="${LEFT}" x2="${LEFT}" y1="${TOP}" y2="${TOP + plotHeight}"/>
<text class="axis-label" x="${LEFT + plotWidth / 2}" y="${HEIGHT - 6}" text-anchor="middle">Epoch</text>
<polyline class="cer-line" fill="none" points="${line}"/>
${points.map(
  (point) =>
    html`<circle class="cer-point${point === best ? ' best' : ''}" cx="${round(x(point.epoch))}" cy="${round(y(point.validation_cer))}" r="4"><title>Epoch ${point.epoch}: ${percent(point.validation_cer)}</title></circle>`,
)}
</svg><figcaption class="muted">Validation CER (the share of characters read wrong on the held-out lines) after each epoch; the lowest is marked, and that epoch’s model is kept.</figcaption></figure>`;
}
