/**
 * Benchmark results as a Markdown table, an SVG bar chart and the webview's HTML. Pure: no `vscode`.
 */

import type { BenchmarkResult, BenchmarkRow } from './protocol';

export function escapeHtml(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** Escapes text for a Markdown table cell. */
export function escapeMarkdownCell(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}

const DASH = '—';

function finite(x: number | null | undefined): x is number {
  return typeof x === 'number' && Number.isFinite(x);
}

/** 0.0123 → "12.3 µs", 1.234 → "1.23 ms", 1234 → "1.23 s". */
export function formatMs(ms: number | null | undefined): string {
  if (!finite(ms)) return DASH;
  if (ms === 0) return '0 ms';
  const abs = Math.abs(ms);
  if (abs < 1) return `${sig(ms * 1000)} µs`;
  if (abs < 1000) return `${sig(ms)} ms`;
  return `${sig(ms / 1000)} s`;
}

export function formatSeconds(s: number | null | undefined): string {
  if (!finite(s)) return DASH;
  return s < 1 ? formatMs(s * 1000) : `${sig(s)} s`;
}

function sig(x: number): string {
  const abs = Math.abs(x);
  if (abs >= 100) return x.toFixed(0);
  if (abs >= 10) return x.toFixed(1);
  return x.toFixed(2);
}

export function formatSpeedup(x: number | null | undefined): string {
  if (!finite(x)) return DASH;
  if (x >= 10) return `${x.toFixed(1)}×`;
  if (x >= 0.1 || x === 0) return `${x.toFixed(2)}×`;
  return `${x.toPrecision(2)}×`; // a slowdown: 0.0047×, not 0.00×
}

export function formatCount(n: number | null | undefined): string {
  if (!finite(n)) return DASH;
  return Math.round(n).toLocaleString('en-US');
}

function formatBreakEven(row: BenchmarkRow): string {
  if (finite(row.break_even_calls)) return formatCount(row.break_even_calls);
  // No break-even: compiled is not faster, so compiling never pays for itself.
  if (finite(row.speedup) && row.speedup <= 1) return 'never';
  return DASH;
}

function withSpread(median: number | null | undefined, iqr: number | null | undefined): string {
  if (!finite(median)) return DASH;
  return finite(iqr) ? `${formatMs(median)} ± ${formatMs(iqr)}` : formatMs(median);
}

export function formatDynamic(d: boolean | null | undefined): string {
  if (d === true) return 'on';
  if (d === false) return 'off';
  return 'auto';
}

export const TABLE_HEADERS = [
  'Device',
  'Mode',
  'Dynamic',
  'Eager (median ± IQR)',
  'Compiled (median ± IQR)',
  'Speedup',
  'Cold compile',
  'Break-even calls',
  'Repeats',
] as const;

/** One table row of display strings per result row. */
export function tableRows(result: BenchmarkResult): string[][] {
  return result.rows.map((r) => [
    r.device,
    r.mode ?? result.environment?.mode ?? 'default',
    formatDynamic(r.dynamic !== undefined ? r.dynamic : result.environment?.dynamic),
    r.error ? `error: ${r.error}` : withSpread(r.eager_median_ms, r.eager_iqr_ms),
    r.error ? DASH : withSpread(r.compiled_median_ms, r.compiled_iqr_ms),
    formatSpeedup(r.speedup),
    formatSeconds(r.cold_compile_s),
    formatBreakEven(r),
    finite(r.repeats) ? String(r.repeats) : DASH,
  ]);
}

/** Environment facts, in display order. */
export function environmentFacts(result: BenchmarkResult): [string, string][] {
  const env = result.environment ?? {};
  const facts: [string, string][] = [];
  if (env.torch) facts.push(['torch', String(env.torch)]);
  if (env.python) facts.push(['Python', String(env.python)]);
  if (env.backend) facts.push(['backend', String(env.backend)]);
  if (env.mode) facts.push(['mode', String(env.mode)]);
  facts.push(['dynamic', formatDynamic(env.dynamic)]);
  if (result.input_shapes && result.input_shapes.length > 0) facts.push(['inputs', result.input_shapes.join(', ')]);
  if (result.measured_at) facts.push(['measured', result.measured_at]);
  return facts;
}

export const SMALL_INPUTS_WARNING =
  'The example inputs are small: these timings may not predict real use (overheads dominate).';

export function toMarkdown(result: BenchmarkResult): string {
  if (result.rows.length === 0 && result.markdown) return result.markdown;
  const lines: string[] = [];
  lines.push(`### Benchmark: \`${result.target}\``);
  lines.push('');
  lines.push(`| ${TABLE_HEADERS.join(' | ')} |`);
  lines.push(`| ${TABLE_HEADERS.map((_, i) => (i < 3 ? '---' : '---:')).join(' | ')} |`);
  for (const row of tableRows(result)) lines.push(`| ${row.map(escapeMarkdownCell).join(' | ')} |`);
  lines.push('');
  lines.push(environmentFacts(result).map(([k, v]) => `${k}: ${v.includes('`') ? v : `\`${v}\``}`).join(' · '));
  if (result.small_inputs) {
    lines.push('');
    lines.push(`> ⚠ ${SMALL_INPUTS_WARNING}`);
  }
  return lines.join('\n') + '\n';
}

export interface ChartOptions {
  width?: number;
  barHeight?: number;
}

/**
 * Horizontal grouped bar chart: per row an eager and a compiled bar (median, with an IQR whisker),
 * on one linear scale. Colours come from CSS classes (theme variables) so no inline style is needed.
 */
export function renderBarChartSvg(result: BenchmarkResult, opts: ChartOptions = {}): string {
  const width = opts.width ?? 640;
  const barH = opts.barHeight ?? 16;
  const labelW = 150;
  const valueW = 130;
  const plotW = Math.max(100, width - labelW - valueW);
  const rows = result.rows.filter((r) => finite(r.eager_median_ms) || finite(r.compiled_median_ms));
  const groupH = barH * 2 + 14;
  const legendH = 24;
  const height = legendH + Math.max(1, rows.length) * groupH + 20;

  const maxVal = Math.max(
    1e-9,
    ...rows.flatMap((r) => [
      (r.eager_median_ms ?? 0) + (r.eager_iqr_ms ?? 0) / 2,
      (r.compiled_median_ms ?? 0) + (r.compiled_iqr_ms ?? 0) / 2,
    ]),
  );
  const x = (v: number) => labelW + (Math.max(0, v) / maxVal) * plotW;

  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="100%" preserveAspectRatio="xMinYMin meet" viewBox="0 0 ${width} ${height}" aria-label="${escapeHtml(
      `Eager vs compiled median time for ${result.target}`,
    )}">`,
  );
  parts.push(`<title>${escapeHtml(`Eager vs compiled median time (ms) — ${result.target}`)}</title>`);
  // Legend.
  parts.push(`<rect class="bar-eager" x="${labelW}" y="4" width="12" height="12"/>`);
  parts.push(`<text class="legend" x="${labelW + 16}" y="14">eager</text>`);
  parts.push(`<rect class="bar-compiled" x="${labelW + 70}" y="4" width="12" height="12"/>`);
  parts.push(`<text class="legend" x="${labelW + 86}" y="14">compiled</text>`);

  if (rows.length === 0) {
    parts.push(`<text class="label" x="${labelW}" y="${legendH + 16}">no timings</text>`);
  }
  rows.forEach((r, i) => {
    const y0 = legendH + i * groupH;
    const label = [r.device, r.mode && r.mode !== 'default' ? r.mode : '', r.dynamic === true ? 'dynamic' : '']
      .filter(Boolean)
      .join(' · ');
    parts.push(
      `<text class="label" x="${labelW - 8}" y="${y0 + barH + 4}" text-anchor="end">${escapeHtml(label)}</text>`,
    );
    const bars: [string, number | null | undefined, number | null | undefined, number][] = [
      ['eager', r.eager_median_ms, r.eager_iqr_ms, y0],
      ['compiled', r.compiled_median_ms, r.compiled_iqr_ms, y0 + barH + 2],
    ];
    for (const [kind, median, iqr, y] of bars) {
      if (!finite(median)) continue;
      const w = Math.max(1, x(median) - labelW);
      parts.push(
        `<rect class="bar-${kind}" data-kind="${kind}" data-device="${escapeHtml(r.device)}" x="${labelW}" y="${y}" width="${w.toFixed(
          1,
        )}" height="${barH}"><title>${escapeHtml(`${r.device} ${kind}: ${formatMs(median)}`)}</title></rect>`,
      );
      if (finite(iqr) && iqr > 0) {
        const lo = x(median - iqr / 2);
        const hi = x(median + iqr / 2);
        const cy = y + barH / 2;
        parts.push(
          `<path class="whisker" d="M${lo.toFixed(1)} ${cy} H${hi.toFixed(1)} M${lo.toFixed(1)} ${cy - 4} V${cy + 4} M${hi.toFixed(
            1,
          )} ${cy - 4} V${cy + 4}"/>`,
        );
      }
      parts.push(
        `<text class="value" x="${(labelW + w + 6).toFixed(1)}" y="${y + barH - 4}">${escapeHtml(formatMs(median))}</text>`,
      );
    }
    if (finite(r.speedup)) {
      parts.push(
        `<text class="speedup" x="${width - 4}" y="${y0 + barH + 4}" text-anchor="end">${escapeHtml(
          formatSpeedup(r.speedup),
        )}</text>`,
      );
    }
  });
  // Axis.
  const axisY = legendH + Math.max(1, rows.length) * groupH;
  parts.push(`<line class="axis" x1="${labelW}" y1="${axisY}" x2="${labelW + plotW}" y2="${axisY}"/>`);
  parts.push(`<text class="tick" x="${labelW}" y="${axisY + 14}">0</text>`);
  parts.push(
    `<text class="tick" x="${labelW + plotW}" y="${axisY + 14}" text-anchor="end">${escapeHtml(formatMs(maxVal))}</text>`,
  );
  parts.push('</svg>');
  return parts.join('');
}

export interface HtmlOptions {
  nonce: string;
  cspSource: string;
}

/** The whole webview document. The only script posts `{type: 'copyMarkdown'}` to the extension. */
export function renderBenchmarkHtml(result: BenchmarkResult, opts: HtmlOptions): string {
  const n = escapeHtml(opts.nonce);
  const head = TABLE_HEADERS.map((h, i) => `<th${i >= 3 ? ' class="num"' : ''}>${escapeHtml(h)}</th>`).join('');
  const body = tableRows(result)
    .map(
      (cells, ri) =>
        `<tr${result.rows[ri]?.error ? ' class="row-error"' : ''}>${cells
          .map((c, i) => `<td${i >= 3 ? ' class="num"' : ''}>${escapeHtml(c)}</td>`)
          .join('')}</tr>`,
    )
    .join('\n');
  const facts = environmentFacts(result)
    .map(([k, v]) => `<span class="fact"><span class="k">${escapeHtml(k)}</span> ${escapeHtml(v)}</span>`)
    .join(' ');
  const warning = result.small_inputs ? `<p class="warning">⚠ ${escapeHtml(SMALL_INPUTS_WARNING)}</p>` : '';
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src ${escapeHtml(
    opts.cspSource,
  )} data:; style-src 'nonce-${n}'; script-src 'nonce-${n}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>${escapeHtml(`Benchmark: ${result.target}`)}</title>
<style nonce="${n}">
  body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); padding: 0 16px 16px; }
  h2 { font-weight: 600; margin: 12px 0 4px; }
  h2 code { font-family: var(--vscode-editor-font-family); }
  .toolbar { margin: 8px 0 12px; }
  button { background: var(--vscode-button-background); color: var(--vscode-button-foreground); border: none; padding: 4px 12px; cursor: pointer; }
  button:hover { background: var(--vscode-button-hoverBackground); }
  table { border-collapse: collapse; margin: 8px 0 16px; }
  th, td { padding: 4px 10px; border-bottom: 1px solid var(--vscode-panel-border, #8884); text-align: left; white-space: nowrap; }
  th { font-weight: 600; }
  .num { text-align: right; font-variant-numeric: tabular-nums; }
  .row-error td { color: var(--vscode-errorForeground); }
  .facts { color: var(--vscode-descriptionForeground); margin: 4px 0; }
  .fact { margin-right: 12px; }
  .fact .k { font-weight: 600; }
  .warning { color: var(--vscode-editorWarning-foreground, #cca700); }
  .chart { max-width: 640px; display: block; }
  .table-wrap { overflow-x: auto; }
  .chart .bar-eager { fill: var(--vscode-charts-blue, #3794ff); }
  .chart .bar-compiled { fill: var(--vscode-charts-orange, #d18616); }
  .chart .whisker { stroke: var(--vscode-foreground); stroke-width: 1; fill: none; }
  .chart text { fill: var(--vscode-foreground); font-size: 12px; }
  .chart .speedup { font-weight: 600; }
  .chart .axis { stroke: var(--vscode-descriptionForeground); }
  .chart .tick { fill: var(--vscode-descriptionForeground); font-size: 11px; }
</style>
</head>
<body>
<h2>Benchmark: <code>${escapeHtml(result.target)}</code></h2>
<div class="facts">${facts}</div>
${warning}
<div class="toolbar"><button id="copy-markdown" type="button">Copy as Markdown</button></div>
<div class="table-wrap"><table id="results">
<thead><tr>${head}</tr></thead>
<tbody>
${body}
</tbody>
</table></div>
${renderBarChartSvg(result)}
<script nonce="${n}">
  const vscode = acquireVsCodeApi();
  document.getElementById('copy-markdown').addEventListener('click', () => vscode.postMessage({ type: 'copyMarkdown' }));
</script>
</body>
</html>`;
}

/** Accepts a benchmark result from the daemon defensively. */
export function parseBenchmarkResult(raw: unknown): BenchmarkResult | undefined {
  if (!raw || typeof raw !== 'object') return undefined;
  const o = raw as Record<string, unknown>;
  if (!Array.isArray(o.rows)) return undefined;
  const rows = o.rows.filter((r): r is BenchmarkRow => !!r && typeof r === 'object' && typeof (r as BenchmarkRow).device === 'string');
  return {
    ...(o as unknown as BenchmarkResult),
    target: typeof o.target === 'string' ? o.target : '(unknown target)',
    rows,
  };
}
