import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BenchmarkResult } from '../../src/protocol';
import {
  TABLE_HEADERS,
  escapeHtml,
  formatMs,
  formatSeconds,
  formatSpeedup,
  parseBenchmarkResult,
  renderBarChartSvg,
  renderBenchmarkHtml,
  tableRows,
  toMarkdown,
} from '../../src/render';

const RESULT: BenchmarkResult = {
  target: 'models/cnn.py::compile_example',
  uri: 'file:///ws/models/cnn.py',
  environment: { torch: '2.13.0', python: '3.11.7', backend: 'inductor', mode: 'default', dynamic: null },
  input_shapes: ['x: float32[8, 3, 32, 32]'],
  small_inputs: true,
  rows: [
    {
      device: 'cpu',
      mode: 'default',
      dynamic: null,
      eager_median_ms: 1.2,
      eager_iqr_ms: 0.1,
      compiled_median_ms: 0.6,
      compiled_iqr_ms: 0.05,
      speedup: 2.0,
      cold_compile_s: 3.1,
      break_even_calls: 5166,
      repeats: 20,
    },
    {
      device: 'cuda:0',
      mode: 'default',
      dynamic: null,
      eager_median_ms: 0.3,
      eager_iqr_ms: 0.01,
      compiled_median_ms: 0.4,
      compiled_iqr_ms: 0.02,
      speedup: 0.75,
      cold_compile_s: 0.8,
      break_even_calls: null,
      repeats: 20,
    },
  ],
  markdown: '| server |',
};

describe('formatters', () => {
  it('formats times with units and three significant figures', () => {
    assert.equal(formatMs(1.2), '1.20 ms');
    assert.equal(formatMs(0.0123), '12.3 µs');
    assert.equal(formatMs(1234), '1.23 s');
    assert.equal(formatMs(null), '—');
    assert.equal(formatSeconds(3.1), '3.10 s');
    assert.equal(formatSeconds(0.25), '250 ms');
    assert.equal(formatSpeedup(2), '2.00×');
    assert.equal(formatSpeedup(12.34), '12.3×');
    assert.equal(formatSpeedup(0.75), '0.75×');
    assert.equal(formatSpeedup(0.0047), '0.0047×');
  });
});

describe('tableRows', () => {
  it('renders one row per device with median ± IQR, speedup and break-even', () => {
    const rows = tableRows(RESULT);
    assert.equal(rows.length, 2);
    assert.equal(rows[0].length, TABLE_HEADERS.length);
    assert.deepEqual(rows[0], ['cpu', 'default', 'auto', '1.20 ms ± 100 µs', '600 µs ± 50.0 µs', '2.00×', '3.10 s', '5,166', '20']);
    assert.equal(rows[1][7], 'never', 'no break-even when compiled is slower');
  });

  it('shows a row error instead of timings', () => {
    const rows = tableRows({ target: 't', rows: [{ device: 'cuda:0', error: 'CUDA out of memory' }] });
    assert.equal(rows[0][3], 'error: CUDA out of memory');
  });
});

describe('toMarkdown', () => {
  it('is a Markdown table with a header, an alignment row and one line per device', () => {
    const md = toMarkdown(RESULT);
    const lines = md.split('\n');
    const tableLines = lines.filter((l) => l.startsWith('|'));
    assert.equal(tableLines.length, 4);
    assert.match(tableLines[0], /^\| Device \| Mode \| Dynamic \| Eager/);
    assert.match(tableLines[1], /^\| --- \| --- \| --- \| ---: \|/);
    assert.match(tableLines[2], /^\| cpu \| default \| auto \| 1\.20 ms ± 100 µs \|/);
    assert.match(md, /torch: `2\.13\.0`/);
    assert.match(md, /inputs: `x: float32\[8, 3, 32, 32\]`/);
    assert.match(md, /small: these timings may not predict/);
  });

  it('escapes pipes in cells', () => {
    const md = toMarkdown({ target: 't', rows: [{ device: 'cpu', error: 'a|b' }] });
    assert.match(md, /error: a\\\|b/);
  });

  it('falls back to the daemon markdown when there are no rows', () => {
    assert.equal(toMarkdown({ target: 't', rows: [], markdown: '| x |' }), '| x |');
  });
});

describe('renderBarChartSvg', () => {
  it('draws an eager and a compiled bar per row, scaled to the largest', () => {
    const svg = renderBarChartSvg(RESULT, { width: 640 });
    const bars = [...svg.matchAll(/<rect class="bar-(eager|compiled)" data-kind="\w+" data-device="([^"]+)" x="[\d.]+" y="[\d.]+" width="([\d.]+)"/g)];
    assert.equal(bars.length, 4);
    const width = (kind: string, device: string) => Number(bars.find((b) => b[1] === kind && b[2] === device)?.[3]);
    assert.ok(width('eager', 'cpu') > width('compiled', 'cpu'));
    assert.ok(Math.abs(width('eager', 'cpu') / width('compiled', 'cpu') - 2) < 0.05, 'bar lengths are proportional');
    assert.ok(width('eager', 'cpu') > width('eager', 'cuda:0'));
    assert.match(svg, /2\.00×/);
    assert.match(svg, /<path class="whisker"/);
    assert.ok(svg.startsWith('<svg') && svg.endsWith('</svg>'));
  });

  it('says so when there are no timings', () => {
    assert.match(renderBarChartSvg({ target: 't', rows: [] }), /no timings/);
  });
});

describe('renderBenchmarkHtml', () => {
  it('is a self-contained page: CSP with a nonce, table, chart and the copy button', () => {
    const html = renderBenchmarkHtml(RESULT, { nonce: 'abc123', cspSource: 'vscode-webview:' });
    assert.match(html, /Content-Security-Policy/);
    assert.match(html, /script-src 'nonce-abc123'/);
    assert.doesNotMatch(html, /https?:\/\/(?!www\.w3\.org\/2000\/svg)/, 'nothing is loaded from the network');
    assert.match(html, /<table id="results">/);
    assert.equal((html.match(/<tr>/g) ?? []).length, 1 + 2);
    assert.match(html, /<svg /);
    assert.match(html, /id="copy-markdown"/);
    assert.match(html, /inputs are small|example inputs are small/i);
    for (const m of html.matchAll(/<script([^>]*)>/g)) assert.match(m[1], /nonce="abc123"/);
  });

  it('escapes what the daemon sends', () => {
    const html = renderBenchmarkHtml({ target: '<img src=x onerror=alert(1)>', rows: [{ device: '<b>' }] }, { nonce: 'n', cspSource: 'c' });
    assert.doesNotMatch(html, /<img src=x/);
    assert.match(html, /&lt;img src=x onerror=alert\(1\)&gt;/);
    assert.equal(escapeHtml(`"'&`), '&quot;&#39;&amp;');
  });
});

describe('parseBenchmarkResult', () => {
  it('rejects non-results and drops malformed rows', () => {
    assert.equal(parseBenchmarkResult(null), undefined);
    assert.equal(parseBenchmarkResult({ target: 'x' }), undefined);
    const r = parseBenchmarkResult({ target: 'x', rows: [{ device: 'cpu' }, { nope: 1 }, null] });
    assert.equal(r?.rows.length, 1);
  });
});
