/**
 * The capacity chart as a standalone SVG (an artifact next to the markdown): two panels,
 * throughput and p95 latency against the concurrency cap, one line per side, the knee marked,
 * steps with refused sessions marked in red. Steps are spaced evenly (the sweep's caps are
 * often geometric), each labelled with its cap. No fonts or scripts are fetched.
 */
import path from 'node:path';
import type { CapacityReport, CapacitySideReport } from './report-types.js';

const WIDTH = 960;
const HEIGHT = 460;
const PANEL = { top: 90, bottom: 84, left: 80, width: 360, gap: 120 };
const COLORS: Record<string, string> = { base: '#1f77b4', head: '#e4572e', schema: '#1f77b4', database: '#1f77b4' };
const DASH: Record<string, string> = { base: '', head: '6 4', schema: '', database: '' };

const esc = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** A round upper bound and step for an axis from 0 to at least `max`, with about five ticks. */
export function niceAxis(max: number): { top: number; step: number } {
  if (!(max > 0)) return { top: 1, step: 0.2 };
  const raw = max / 5;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * power).find((s) => s >= raw)!;
  return { top: Math.ceil(max / step) * step, step };
}

function tickLabel(value: number, step: number): string {
  const decimals = step >= 1 ? 0 : Math.min(3, Math.ceil(-Math.log10(step)));
  return value.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

interface Panel {
  title: string;
  unit: string;
  value: (side: CapacitySideReport, connections: number) => number | undefined;
}

function panel(report: CapacityReport, spec: Panel, left: number): string[] {
  const xs = report.settings.connections;
  const plotH = HEIGHT - PANEL.top - PANEL.bottom;
  const values = report.sides.flatMap((side) => xs.map((c) => spec.value(side, c) ?? 0));
  const { top, step } = niceAxis(Math.max(...values));
  const x = (i: number) => left + (xs.length === 1 ? PANEL.width / 2 : (i * PANEL.width) / (xs.length - 1));
  const y = (v: number) => PANEL.top + plotH - (v / top) * plotH;
  const out: string[] = [
    `<text x="${left + PANEL.width / 2}" y="${PANEL.top - 14}" text-anchor="middle" font-size="15" font-weight="bold">${esc(spec.title)}</text>`,
  ];
  for (let v = 0; v <= top + step / 2; v += step) {
    out.push(`<line x1="${left}" x2="${left + PANEL.width}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`);
    out.push(`<text x="${left - 8}" y="${y(v) + 4}" text-anchor="end" font-size="12">${tickLabel(v, step)}</text>`);
  }
  out.push(`<line x1="${left}" x2="${left}" y1="${PANEL.top}" y2="${PANEL.top + plotH}" stroke="#333"/>`);
  out.push(`<line x1="${left}" x2="${left + PANEL.width}" y1="${PANEL.top + plotH}" y2="${PANEL.top + plotH}" stroke="#333"/>`);
  xs.forEach((c, i) => {
    out.push(`<line x1="${x(i)}" x2="${x(i)}" y1="${PANEL.top + plotH}" y2="${PANEL.top + plotH + 5}" stroke="#333"/>`);
    out.push(`<text x="${x(i)}" y="${PANEL.top + plotH + 20}" text-anchor="middle" font-size="12">${c}</text>`);
  });
  out.push(
    `<text x="${left + PANEL.width / 2}" y="${PANEL.top + plotH + 42}" text-anchor="middle" font-size="13">concurrent connections (cap per step)</text>`,
  );
  const midY = PANEL.top + plotH / 2;
  out.push(
    `<text x="${left - 56}" y="${midY}" text-anchor="middle" font-size="13" transform="rotate(-90 ${left - 56} ${midY})">${esc(spec.unit)}</text>`,
  );
  for (const side of report.sides) {
    const color = COLORS[side.side] ?? '#333';
    const points = xs
      .map((c, i) => ({ i, c, v: spec.value(side, c) }))
      .filter((p): p is { i: number; c: number; v: number } => p.v !== undefined);
    out.push(
      `<polyline fill="none" stroke="${color}" stroke-width="2.5"${DASH[side.side] ? ` stroke-dasharray="${DASH[side.side]}"` : ''} points="${points.map((p) => `${x(p.i).toFixed(1)},${y(p.v).toFixed(1)}`).join(' ')}"/>`,
    );
    for (const p of points) {
      const step = side.steps.find((s) => s.connections === p.c);
      const refused = (step?.refused_sessions ?? 0) > 0;
      out.push(`<circle cx="${x(p.i).toFixed(1)}" cy="${y(p.v).toFixed(1)}" r="${refused ? 5 : 3.5}" fill="${refused ? '#c00' : color}"/>`);
      if (side.knee.connections === p.c) {
        out.push(`<circle cx="${x(p.i).toFixed(1)}" cy="${y(p.v).toFixed(1)}" r="8" fill="none" stroke="${color}" stroke-width="2"/>`);
      }
    }
  }
  return out;
}

/**
 * @param report the capacity report (with at least one side)
 * @returns the SVG document
 */
export function renderCapacitySvg(report: CapacityReport): string {
  const at = (side: CapacitySideReport, c: number) => side.steps.find((s) => s.connections === c);
  const left1 = PANEL.left;
  const left2 = PANEL.left + PANEL.width + PANEL.gap;
  const legend: string[] = [];
  let lx = PANEL.left;
  const ly = HEIGHT - 14;
  for (const side of report.sides) {
    const color = COLORS[side.side] ?? '#333';
    legend.push(
      `<line x1="${lx}" x2="${lx + 30}" y1="${ly - 4}" y2="${ly - 4}" stroke="${color}" stroke-width="2.5"${DASH[side.side] ? ` stroke-dasharray="${DASH[side.side]}"` : ''}/>`,
    );
    legend.push(
      `<text x="${lx + 36}" y="${ly}" font-size="13">${esc(side.side)}${side.knee.connections !== null ? ` (knee at ${side.knee.connections})` : ' (no knee)'}</text>`,
    );
    lx += 210;
  }
  legend.push(
    `<circle cx="${lx + 6}" cy="${ly - 4}" r="8" fill="none" stroke="#333" stroke-width="2"/><text x="${lx + 20}" y="${ly}" font-size="13">knee</text>`,
  );
  legend.push(
    `<circle cx="${lx + 86}" cy="${ly - 4}" r="5" fill="#c00"/><text x="${lx + 96}" y="${ly}" font-size="13">sessions refused</text>`,
  );
  const title = `Capacity: ${path.basename(report.environment.workload.path)} × ${report.settings.scale}${report.settings.read_only ? ', read-only' : ', writes included'}`;
  const shorten = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="Helvetica, Arial, sans-serif">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="${WIDTH / 2}" y="26" text-anchor="middle" font-size="16" font-weight="bold">${esc(shorten(title, 100))}</text>`,
    `<text x="${WIDTH / 2}" y="48" text-anchor="middle" font-size="13">${esc(shorten(report.headline, 130))}</text>`,
    ...panel(
      report,
      { title: 'Throughput (successful statements)', unit: 'statements / s', value: (side, c) => at(side, c)?.throughput },
      left1,
    ),
    ...panel(
      report,
      {
        title: 'p95 latency (successful statements)',
        unit: 'milliseconds',
        value: (side, c) => (at(side, c) ? at(side, c)!.p95_us / 1000 : undefined),
      },
      left2,
    ),
    ...legend,
    '</svg>',
    '',
  ].join('\n');
}
