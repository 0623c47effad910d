#!/usr/bin/env node
// End-to-end tests of the packaged extension in a real VS Code (code-server 4.139.1 / VS Code
// 1.139) driven through Debian's Chromium with playwright-core, against the real daemon.
//
//   node extension/test/e2e/run.mjs [--smoke] [--scenario trusted,untrusted,notorch] [--results DIR]
//                                   [--bench-file] [--keep]
//
// --smoke      only: the extension activates and its language status item appears.
// --results    where screenshots, logs and results.json go (default out/e2e-results).
// Writes out/e2e-results/extension-timings.md (activation and open-to-first-squiggle times) after a
// full run; `--bench-file` writes bench/extension/RESULTS.md instead, to be committed on purpose.
// Environment: DL_E2E_PYTHON (interpreter for the daemon; default .venv/bin/python), DL_E2E_TIMEOUT_S
// (per wait for analysis results; default 300), DL_E2E_NOTORCH_PYTHON (a Python without torch for
// the static-only scenario; default /usr/bin/python3), DL_E2E_VSIX (the .vsix to test).
import { spawnSync } from 'node:child_process';
import { test as nodeTest } from 'node:test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { baseSettings, checkInstalled, findExtensionLog, freePort, prepareProfile, ROOT, startCodeServer, vsixPath } from './codeServer.mjs';
import { parseMarkers } from './markers.mjs';
import { pythonProcesses } from './procs.mjs';
import { importedFiles, targetLines } from './targets.mjs';
import {
  answerOpenDialog,
  findWebviewFrame,
  goToLine,
  hoverAtLine,
  languageStatusText,
  launchBrowser,
  notifications,
  openFile,
  openWorkbench,
  paletteRows,
  problems,
  quickPickState,
  runCommand,
  screenshot,
  visibleSquiggles,
  waitForSquiggles,
} from './workbench.mjs';

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const opt = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 && argv[i + 1] ? argv[i + 1] : dflt;
};
const SMOKE = flag('--smoke');
const SCENARIOS = opt('--scenario', SMOKE ? 'trusted' : 'trusted,untrusted,notorch').split(',');
const RESULTS = path.resolve(opt('--results', path.join(ROOT, 'out', 'e2e-results')));
const KEEP = flag('--keep');
const WAIT_MS = Number(process.env.DL_E2E_TIMEOUT_S ?? 300) * 1000;
const PYTHON =
  process.env.DL_E2E_PYTHON ?? (fs.existsSync(path.join(ROOT, '.venv', 'bin', 'python')) ? path.join(ROOT, '.venv', 'bin', 'python') : 'python3');
const EXAMPLE = path.join(ROOT, 'example_workspace');

// The script "Run File with Analysis" runs in the trusted scenario (written into the copied
// workspace; shared with tests/lsp/test_lsp_runs.py): a data-dependent branch that torch breaks
// on, at its marked line.
const TRAIN_SCRIPT = fs.readFileSync(path.join(ROOT, 'tests', 'fixtures', 'runs', 'train_run.py'), 'utf8');
const TRAIN_BREAK_LINE = parseMarkers(TRAIN_SCRIPT, 'train_run.py').find((m) => m.kind === 'graph_break').line;

const results = [];
const metrics = {};
const started = Date.now();

function log(msg) {
  const t = ((Date.now() - started) / 1000).toFixed(1).padStart(6);
  console.log(`[e2e ${t}s] ${msg}`);
}

class Failure extends Error {}
function expect(cond, msg) {
  if (!cond) throw new Failure(msg);
}

// One check, run as a node:test subtest of its scenario (sequential, sharing the scenario's
// browser page). Its details, timing and a screenshot also go to results.json.
async function test(t, name, page, fn) {
  const slug = name.replace(/[^a-z0-9]+/gi, '-').replace(/^-|-$/g, '').toLowerCase();
  const rec = { name, ok: false, ms: 0, details: {} };
  await t.test(name, async () => {
    const t0 = Date.now();
    log(`▶ ${name}`);
    try {
      await fn(rec.details);
      rec.ok = true;
    } catch (e) {
      rec.error = e instanceof Error ? `${e.message}` : String(e);
      if (!(e instanceof Failure) && e instanceof Error && e.stack) rec.stack = e.stack;
    }
    rec.ms = Date.now() - t0;
    try {
      rec.screenshot = path.relative(RESULTS, await screenshot(page, RESULTS, `${String(results.length + 1).padStart(2, '0')}-${slug}`));
    } catch (e) {
      rec.screenshotError = String(e);
    }
    results.push(rec);
    log(`${rec.ok ? '✔' : '✘'} ${name} (${(rec.ms / 1000).toFixed(1)} s)${rec.ok ? '' : `: ${rec.error}`}`);
    if (!rec.ok) throw new Error(rec.error);
  });
  return rec.ok;
}

function copyWorkspace(dir) {
  const ws = path.join(dir, 'example_workspace');
  fs.cpSync(EXAMPLE, ws, {
    recursive: true,
    filter: (src) => !/(__pycache__|\.dynamo-lens)(\/|$)/.test(src),
  });
  return ws;
}

function markersOf(ws, rel) {
  return parseMarkers(fs.readFileSync(path.join(ws, rel), 'utf8'), rel);
}

/** Parses "2026-12-02 14:06:28.274" (local time) from a log line. */
function logTime(line) {
  const m = /^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{3})/.exec(line);
  if (!m) return undefined;
  return new Date(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6], +m[7]).getTime();
}

function findHostLog(userDataDir) {
  const logs = path.join(userDataDir, 'logs');
  if (!fs.existsSync(logs)) return undefined;
  for (const session of fs.readdirSync(logs).sort().reverse()) {
    const f = path.join(logs, session, 'exthost1', 'remoteexthost.log');
    if (fs.existsSync(f)) return f;
  }
  return undefined;
}

function readExtensionLog(userDataDir) {
  const file = findExtensionLog(userDataDir);
  return file ? fs.readFileSync(file, 'utf8') : '';
}

async function waitForLog(userDataDir, re, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const text = readExtensionLog(userDataDir);
    const line = text.split('\n').find((l) => re.test(l));
    if (line) return line;
    await new Promise((r) => setTimeout(r, 250));
  }
  return undefined;
}

/** Problems-panel rows of dynamo-lens diagnostics: {file, line, code, text}. */
async function dynamoProblems(page) {
  const rows = await problems(page);
  const out = [];
  let file;
  for (const r of rows) {
    const s = `${r.aria} ${r.text}`;
    const fm = /^(\S+\.(?:py|ipynb))\b/.exec(r.text) ?? /(\S+\.(?:py|ipynb))/.exec(r.aria);
    if (!/\[Ln \d+/.test(r.text) && !/line \d+/i.test(r.aria) && fm) {
      file = fm[1];
      continue;
    }
    if (!/dynamo-lens/.test(s)) continue;
    const lm = /\[Ln (\d+), Col (\d+)\]/.exec(r.text) ?? /line (\d+)/i.exec(r.aria);
    // The row reads "message dynamo-lens(CODE) [Ln 33, Col 5]"; the parentheses are drawn by CSS.
    const cm = /dynamo-lens\(?([\w.:-]*)\)?\s*\[Ln/.exec(r.text) ?? /dynamo-lens\(?([\w.:-]*)\)?/.exec(r.aria);
    out.push({ file, line: lm ? Number(lm[1]) : undefined, code: cm ? cm[1] : undefined, severity: r.severity, text: r.text });
  }
  return out;
}

async function waitForProblems(page, predicate, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let last = [];
  while (Date.now() < deadline) {
    last = await dynamoProblems(page);
    if (predicate(last)) return { ok: true, rows: last };
    await page.waitForTimeout(2000);
  }
  return { ok: false, rows: last };
}

async function closePanel(page) {
  if (await page.locator('.part.panel').isVisible().catch(() => false)) {
    await runCommand(page, 'View: Hide Panel').catch(() => runCommand(page, 'View: Close Panel').catch(() => undefined));
  }
  await page.keyboard.press('Escape');
}

const BENCHMARK_REQUEST = /Benchmark: \{/;

/**
 * Runs "Benchmark target…" and answers its pickers as they come: the filter text per step (once
 * the list shows it), else Enter. Ends on the event that the pickers are done: the extension logs
 * the request it sends ("Benchmark: {…}"). Between two pickers the extension asks the daemon for
 * its devices, which can take seconds on a loaded machine: no picker in sight is not the end.
 */
async function runBenchmarkPickers(page, userDataDir, answers = {}, start = () => runCommand(page, 'Dynamo Lens: Benchmark target…')) {
  const requests = () => readExtensionLog(userDataDir).split('\n').filter((l) => BENCHMARK_REQUEST.test(l)).length;
  const before = requests();
  await start();
  const titles = [];
  const deadline = Date.now() + 120000;
  let lastTitle = '';
  while (Date.now() < deadline) {
    if (requests() > before) break;
    const st = await quickPickState(page);
    if (!st || st.title === lastTitle || !/Benchmark/.test(st.title) || st.rows.length === 0) {
      await page.waitForTimeout(200);
      continue;
    }
    lastTitle = st.title;
    titles.push({ title: st.title, rows: st.rows });
    const input = page.locator('.quick-input-widget .quick-input-box input');
    const step = /target/.test(st.title) ? 'target' : /mode/.test(st.title) ? 'mode' : /dynamic/.test(st.title) ? 'dynamic' : 'devices';
    if (answers[step]) {
      await input.fill(answers[step]);
      // Enter takes the first row: wait until the filter has put the answer there.
      await page
        .locator('.quick-input-widget .monaco-list-row')
        .first()
        .filter({ hasText: answers[step] })
        .waitFor({ state: 'visible', timeout: 20000 });
    }
    await input.press('Enter');
  }
  return titles;
}

// ---------------------------------------------------------------------------------------------

async function scenarioTrusted(t, browser) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dl-e2e-trusted-'));
  const ws = copyWorkspace(dir);
  fs.writeFileSync(path.join(ws, 'train_run.py'), TRAIN_SCRIPT);
  const prof = prepareProfile(dir, baseSettings({ 'security.workspace.trust.enabled': false, 'dynamoLens.interpreter': PYTHON }));
  const port = await freePort();
  const cs = await startCodeServer({ ...prof, port, logFile: path.join(RESULTS, 'code-server-trusted.log') });
  log(`code-server on ${cs.url}, workspace ${ws}`);
  const { context, page } = await openWorkbench(browser, cs.url, ws);
  try {
    const LOSSES = 'models/losses.py';
    let tOpen = 0;
    const activated = await test(t, 'activates on a Python file and shows its language status item', page, async (d) => {
      tOpen = await openFile(page, LOSSES);
      const line = await waitForLog(prof.userDataDir, /activated in \d+ ms/);
      expect(line, 'the extension log never said "activated"');
      const m = /activated in (\d+) ms \(activate\(\) (\d+) ms, code load (\d+) ms\)/.exec(line);
      d.activationLog = line;
      expect(m, `unexpected activation log line: ${line}`);
      metrics.activationMs = Number(m[1]);
      metrics.activateFnMs = Number(m[2]);
      metrics.codeLoadMs = Number(m[3]);
      const tAct = logTime(line);
      if (tAct) metrics.openToActivatedMs = tAct - tOpen;
      // VS Code's own record of when it began activating us (extension host log).
      const hostLog = findHostLog(prof.userDataDir);
      const begin = hostLog && fs.readFileSync(hostLog, 'utf8').split('\n').find((l) => /_doActivateExtension dynamo-lens\.dynamo-lens/.test(l));
      d.hostActivationLog = begin ?? null;
      if (begin && tAct && logTime(begin)) metrics.vscodeActivationMs = tAct - logTime(begin);
      let text = '';
      const deadline = Date.now() + 30000;
      while (Date.now() < deadline) {
        text = await languageStatusText(page).catch(() => '');
        if (/Dynamo Lens/.test(text) && !/starting/.test(text)) break;
        await page.waitForTimeout(1000);
      }
      d.languageStatus = text;
      expect(/Dynamo Lens/.test(text), `no Dynamo Lens language status item (hover said: ${text})`);
      const started = await waitForLog(prof.userDataDir, /Daemon started in \d+ ms/, 20000);
      if (started) metrics.daemonStartMs = Number(/started in (\d+) ms/.exec(started)[1]);
      d.daemonStarted = started ?? null;
    });
    if (SMOKE || !activated) return;

    const lossesMarkers = markersOf(ws, LOSSES);
    const breakLines = lossesMarkers.filter((m) => m.kind === 'graph_break').map((m) => m.line);
    const recompileLines = lossesMarkers.filter((m) => m.kind === 'recompile').map((m) => m.line);
    await test(t, `graph-break squiggles on the marked lines of ${LOSSES}`, page, async (d) => {
      expect(breakLines.length > 0, `no "# expect: graph_break" markers in ${LOSSES}`);
      d.expected = breakLines;
      const first = await waitForSquiggles(page, [breakLines[0]], { timeoutMs: WAIT_MS });
      if (first.missing.length === 0) metrics.openToFirstSquiggleMs = Date.now() - tOpen;
      const all = await waitForSquiggles(page, breakLines, { timeoutMs: first.missing.length ? 1000 : 30000 });
      d.found = all.found;
      expect(all.missing.length === 0, `no squiggle on line(s) ${all.missing.join(', ')} of ${LOSSES} (seen: ${JSON.stringify(await visibleSquiggles(page))})`);
      // Recompile risks: a warning squiggle where the marker says warning.
      // A recompile risk needs the code to have run (a static hint can come sooner for a break).
      const rec = await waitForSquiggles(page, recompileLines, { timeoutMs: WAIT_MS });
      if (rec.missing.length === 0) metrics.openToDynamicFindingMs = Date.now() - tOpen;
      d.recompiles = { expected: recompileLines, found: rec.found, missing: rec.missing };
      expect(rec.missing.length === 0, `no recompile squiggle on line(s) ${rec.missing.join(', ')}`);
      await waitForSquiggles(page, [breakLines[0]], { timeoutMs: 2000 });
    });

    await test(t, `the Problems panel lists the graph breaks of ${LOSSES}`, page, async (d) => {
      const want = lossesMarkers.filter((m) => m.kind === 'graph_break');
      const r = await waitForProblems(
        page,
        (rows) => want.every((m) => rows.some((p) => p.line === m.line && (!m.code || p.code === m.code || p.text.includes(m.code)))),
        60000,
      );
      d.rows = r.rows;
      expect(r.ok, `Problems lacks ${want.map((m) => `${m.code ?? m.kind}@${m.line}`).join(', ')}: ${JSON.stringify(r.rows)}`);
    });
    await closePanel(page);

    const CNN = 'models/cnn.py';
    await test(t, `a break in a helper: ${CNN} puts its squiggle in the imported file`, page, async (d) => {
      await openFile(page, CNN);
      const cnnText = fs.readFileSync(path.join(ws, CNN), 'utf8');
      const helperMarkers = [CNN, ...importedFiles(cnnText)]
        .filter((f) => fs.existsSync(path.join(ws, f)))
        .flatMap((f) => markersOf(ws, f))
        .filter((m) => m.kind === 'graph_break');
      expect(helperMarkers.length > 0, `no graph_break markers in ${CNN} or the files it imports`);
      d.expected = helperMarkers.map((m) => `${m.file}:${m.line} ${m.code ?? ''}`);
      const r = await waitForProblems(
        page,
        (rows) => helperMarkers.every((m) => rows.some((p) => p.line === m.line && p.file && m.file.endsWith(p.file) && (!m.code || (p.code ?? p.text).includes(m.code)))),
        WAIT_MS,
      );
      d.rows = r.rows;
      expect(r.ok, `Problems lacks ${d.expected.join(', ')}: ${JSON.stringify(r.rows)}`);
      await closePanel(page);
      for (const file of [...new Set(helperMarkers.map((m) => m.file))]) {
        await openFile(page, file);
        const lines = helperMarkers.filter((m) => m.file === file).map((m) => m.line);
        const s = await waitForSquiggles(page, lines, { timeoutMs: 30000 });
        d[`squiggles:${file}`] = s.found;
        expect(s.missing.length === 0, `no squiggle on ${file} line(s) ${s.missing.join(', ')}`);
      }
    });

    await test(t, '"Dynamo Lens: Benchmark target…" from the command palette shows the result panel', page, async (d) => {
      await openFile(page, CNN);
      const tStart = Date.now();
      const titles = await runBenchmarkPickers(page, prof.userDataDir, { target: CNN });
      d.pickers = titles;
      expect(titles.length >= 3, `expected the target, mode and dynamic pickers, saw ${JSON.stringify(titles.map((t) => t.title))}`);
      const progress = await page
        .locator('.notification-toast', { hasText: 'benchmarking' })
        .first()
        .waitFor({ timeout: 20000 })
        .then(() => true)
        .catch(() => false);
      d.progressShown = progress;
      const frame = await findWebviewFrame(page, '#results tbody tr', { timeoutMs: WAIT_MS });
      expect(frame, `no benchmark result panel (notifications: ${JSON.stringify(await notifications(page))})`);
      metrics.benchmarkMs = Date.now() - tStart;
      const rows = await frame.locator('#results tbody tr').allTextContents();
      const bars = await frame.locator('svg.chart rect.bar-eager, svg.chart rect.bar-compiled').count();
      d.rows = rows;
      d.bars = bars;
      expect(rows.length >= 1 && /cpu/.test(rows.join(' ')), `the result table has no cpu row: ${JSON.stringify(rows)}`);
      expect(bars >= 2, `the chart has ${bars} bars`);
      await frame.locator('#copy-markdown').click();
      const copied = await page
        .locator('.notification-toast', { hasText: 'copied as Markdown' })
        .first()
        .waitFor({ timeout: 10000 })
        .then(() => true)
        .catch(() => false);
      d.copied = copied;
      expect(copied, 'no "copied as Markdown" confirmation');
      const clip = await page.evaluate(() => navigator.clipboard.readText()).catch(() => '');
      d.clipboard = clip.slice(0, 500);
      expect(!clip || /\| Device \|/.test(clip), 'the clipboard does not hold the Markdown table');
      await page.waitForTimeout(500);
      await screenshot(page, RESULTS, 'benchmark-panel');
      // Clicking the button focused the webview: close the panel to leave the editor active.
      await page.locator('.tabs-container .tab[aria-label^="Benchmark:"]').first().click({ button: 'middle' });
      await page.locator('.tabs-container .tab[aria-label^="Benchmark:"]').first().waitFor({ state: 'detached', timeout: 10000 });
      await runCommand(page, 'View: Focus First Editor Group');
    });
    // After the benchmark, so that the hover has timings to show.
    await test(t, `hovering a target's def line shows the timing table`, page, async (d) => {
      await openFile(page, CNN);
      const targets = targetLines(fs.readFileSync(path.join(ws, CNN), 'utf8'));
      expect(targets.length > 0, `no compile_example target found in ${CNN}`);
      const { line, target } = targets[0];
      d.target = `${target} (line ${line})`;
      const deadline = Date.now() + Math.min(WAIT_MS, 90000);
      let text = '';
      while (Date.now() < deadline) {
        const hover = await hoverAtLine(page, line, { timeoutMs: 20000 }).catch(() => undefined);
        text = hover ? ((await hover.textContent()) ?? '').replace(/\s+/g, ' ') : '';
        if (/eager/i.test(text) && /compiled/i.test(text) && (await hover.locator('table').count()) > 0) break;
        await page.keyboard.press('Escape');
        await page.waitForTimeout(5000);
      }
      d.hover = text.slice(0, 2000);
      expect(/eager/i.test(text) && /compiled/i.test(text), `no timing table in the hover of line ${line}: "${text.slice(0, 300)}"`);
      expect(/cpu/.test(text), 'the timing table has no cpu row');
    });
    await page.keyboard.press('Escape');

    await page.keyboard.press('Escape');

    await test(t, 'the "▶ Benchmark" code lens starts a benchmark, and its progress notification cancels it', page, async (d) => {
      await openFile(page, CNN);
      const { line } = targetLines(fs.readFileSync(path.join(ws, CNN), 'utf8'))[0];
      await goToLine(page, line);
      const lens = page.locator('.codelens-decoration a', { hasText: 'Benchmark' }).first();
      await lens.waitFor({ timeout: 30000 });
      // max-autotune on CPU compiles for long enough to cancel it midway.
      d.pickers = (await runBenchmarkPickers(page, prof.userDataDir, { mode: 'max-autotune', dynamic: 'dynamic on' }, () => lens.click())).map((t) => t.title);
      expect(!d.pickers.some((t) => /target/.test(t)), 'the code lens asked for the target again');
      const toast = page.locator('.notification-toast', { hasText: 'benchmarking' }).first();
      await toast.waitFor({ timeout: 20000 });
      const tCancel = Date.now();
      await toast.locator('.monaco-button', { hasText: 'Cancel' }).first().click({ timeout: 10000 });
      const said = await page
        .locator('.notification-toast', { hasText: 'benchmark cancelled' })
        .first()
        .waitFor({ timeout: 15000 })
        .then(() => true)
        .catch(() => false);
      expect(said, 'no "benchmark cancelled" message');
      expect(await waitForLog(prof.userDataDir, /Benchmark cancelled by the user/, 5000), 'the client did not log the cancel');
      const ended = await waitForLog(prof.userDataDir, /Benchmark request ended after the cancel/, 60000);
      d.daemonOutcome = ended ?? null;
      expect(ended && /cancelled by the daemon/.test(ended), `the daemon did not cancel the job: ${ended}`);
      const panelOpened = await findWebviewFrame(page, '#results tbody tr', { timeoutMs: 2000 });
      expect(!panelOpened, 'a result panel opened for the cancelled benchmark');
      // The daemon goes back to idle soon after, instead of finishing a max-autotune compile.
      let text = '';
      const deadline = Date.now() + 60000;
      while (Date.now() < deadline) {
        text = await languageStatusText(page).catch(() => '');
        if (/idle/.test(text)) break;
        await page.waitForTimeout(1000);
      }
      d.status = text;
      d.idleAfterCancelMs = Date.now() - tCancel;
      metrics.idleAfterCancelMs = d.idleAfterCancelMs;
      expect(/idle/.test(text), `the daemon is not idle 60 s after the cancel: "${text}"`);
    });

    // A training script with no compile_example: what a real run sees is on its lines.
    const RUN_SCRIPT = 'train_run.py'; // written before code-server started (Quick Open's index)
    const isRunBreak = (r) => r.file === RUN_SCRIPT && r.line === TRAIN_BREAK_LINE && r.code === 'GB0170' && /seen in run "/.test(r.text);
    await test(t, '"Run File with Analysis" shows the run\'s findings with provenance, and the distinct-break summary view opens the line', page, async (d) => {
      await openFile(page, RUN_SCRIPT);
      await runCommand(page, 'Dynamo Lens: Run File with Analysis');
      const r = await waitForProblems(page, (rows) => rows.some(isRunBreak), WAIT_MS);
      d.rows = r.rows.filter((row) => row.file === RUN_SCRIPT);
      expect(r.ok, `no run finding with provenance on ${RUN_SCRIPT}:${TRAIN_BREAK_LINE}: ${JSON.stringify(d.rows)}`);
      log('  the run finding is in the Problems panel');
      await closePanel(page);
      // The view reveals itself after the run: one row per distinct break, the costliest first.
      const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: /Graph Breaks of the Last Run/i }) }).first();
      await pane.waitFor({ state: 'visible', timeout: 30000 });
      const row = pane.locator('.monaco-list-row', { hasText: `${RUN_SCRIPT}:${TRAIN_BREAK_LINE}` }).first();
      await row.waitFor({ state: 'visible', timeout: 30000 });
      d.summaryRows = await pane.locator('.monaco-list-row').allTextContents();
      d.viewMessage = ((await pane.locator('.tree-explorer-viewlet-tree-view-message, .message').first().textContent().catch(() => '')) ?? '').trim();
      expect(d.summaryRows.length === 1, `expected one distinct break in the view: ${JSON.stringify(d.summaryRows)}`);
      expect(/GB0170/.test(d.summaryRows[0]) && /data-dependent/.test(d.summaryRows[0]), `the row does not name the break: ${d.summaryRows[0]}`);
      expect(/run "/.test(d.viewMessage), `the view does not say which run: "${d.viewMessage}"`);
      log('  the summary view shows the break');
      // Beside it, the compiled functions, the costliest to compile first: the script's step.
      const fnPane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: /Compile Time of the Last Run/i }) }).first();
      const fnHeader = fnPane.locator('.pane-header').first();
      if ((await fnHeader.getAttribute('aria-expanded')) === 'false') await fnHeader.click();
      const fnRow = fnPane.locator('.monaco-list-row', { hasText: RUN_SCRIPT }).first();
      await fnRow.waitFor({ state: 'visible', timeout: 30000 });
      d.functionRows = await fnPane.locator('.monaco-list-row').allTextContents();
      expect(d.functionRows.some((r) => /Dynamo .* Inductor/.test(r)), `the compile-time view does not split Dynamo and Inductor: ${JSON.stringify(d.functionRows)}`);
      log('  the compile-time view shows the step');
      // Clicking the row opens the line: from another file, the editor moves there.
      await openFile(page, LOSSES);
      await row.click();
      await page.waitForFunction((b) => document.title.startsWith(b), RUN_SCRIPT, { timeout: 20000 });
      const cursor = page.locator('.statusbar-item', { hasText: /Ln \d+, Col \d+/ }).first();
      await page.waitForFunction(
        (want) => [...document.querySelectorAll('.statusbar-item')].some((e) => new RegExp(`Ln ${want}, Col`).test(e.textContent ?? '')),
        TRAIN_BREAK_LINE,
        { timeout: 20000 },
      );
      d.cursor = ((await cursor.textContent()) ?? '').trim();
      log(`  the row opened ${RUN_SCRIPT} at ${d.cursor}`);
      // The hover on the break names the compiled function's compile time and recompiles.
      const hover = await hoverAtLine(page, TRAIN_BREAK_LINE);
      d.hover = ((await hover.textContent()) ?? '').replace(/\s+/g, ' ').trim();
      expect(/Compile time/.test(d.hover) && /recompiles/.test(d.hover), `the hover has no compile time or recompile count: ${d.hover}`);
      await page.keyboard.press('Escape');
    });

    await test(t, 'restarts are queued: a burst of restarts and an interpreter change leave exactly one daemon', page, async (d) => {
      await openFile(page, LOSSES);
      const countStarts = () => (readExtensionLog(prof.userDataDir).match(/Daemon started in \d+ ms/g) ?? []).length;
      const before = countStarts();
      const logLinesBefore = readExtensionLog(prof.userDataDir).split('\n').length - 1;
      const pidsBefore = pythonProcesses(cs.proc.pid).daemons.map((p) => p.pid);
      await runCommand(page, 'Dynamo Lens: Restart daemon');
      await runCommand(page, 'Dynamo Lens: Restart daemon');
      // Another spelling of the same interpreter, typed into the Settings editor: a change that
      // needs a restart, arriving while the restarts above are still under way.
      const alt = PYTHON.endsWith('/python') && fs.existsSync(`${PYTHON}3`) ? `${PYTHON}3` : `${PYTHON}`;
      await runCommand(page, 'Preferences: Open User Settings (JSON)');
      // VS Code 1.139 shows settings.json in a modal editor over the workbench.
      const settingsEditor = page.locator('.monaco-editor .view-lines', { hasText: '"dynamoLens.interpreter"' }).first();
      await settingsEditor.waitFor({ timeout: 20000 });
      const current = JSON.parse(fs.readFileSync(path.join(prof.userDataDir, 'User', 'settings.json'), 'utf8'));
      const next = JSON.stringify({ ...current, 'dynamoLens.interpreter': alt }, null, 2);
      await page.evaluate((t) => navigator.clipboard.writeText(t), next);
      await settingsEditor.click();
      await page.keyboard.press('Control+A');
      await page.keyboard.press('Control+V');
      await page.keyboard.press('Control+S');
      const settingsFile = path.join(prof.userDataDir, 'User', 'settings.json');
      const savedBy = Date.now() + 20000;
      while (Date.now() < savedBy && !fs.readFileSync(settingsFile, 'utf8').includes(JSON.stringify(alt))) {
        await page.waitForTimeout(200);
      }
      await page.keyboard.press('Escape');
      await runCommand(page, 'Dynamo Lens: Restart daemon');
      // Coalescing, judged from the log's own order of requests and starts (how many requests
      // overlap a running start depends on this machine's speed): a request while a start runs
      // joins the one queued follow-up, so starts must equal what that rule allows. The queue is
      // idle when every request has been served: no start runs and none is queued.
      const replay = () => {
        const events = readExtensionLog(prof.userDataDir)
          .split('\n')
          .slice(logLinesBefore)
          .filter((l) => /Daemon \(re\)start requested|Daemon started in \d+ ms/.test(l));
        let running = false;
        let queued = false;
        let allowed = 0;
        for (const line of events) {
          if (/requested/.test(line)) {
            if (!running) {
              running = true;
              allowed += 1;
            } else queued = true;
          } else if (queued) {
            queued = false;
            allowed += 1;
          } else running = false;
        }
        return { events, allowed, idle: !running && !queued };
      };
      const deadline = Date.now() + 120000;
      let daemons = [];
      let queue = replay();
      while (Date.now() < deadline) {
        queue = replay();
        daemons = pythonProcesses(cs.proc.pid).daemons;
        const settled = daemons.length === 1 && daemons[0].cmdline.join(' ').startsWith(alt) && !pidsBefore.includes(daemons[0].pid);
        if (settled && queue.idle) break;
        await page.waitForTimeout(500);
      }
      await runCommand(page, 'View: Close Editor');
      await openFile(page, LOSSES);
      d.startsBefore = before;
      d.startsAfter = countStarts();
      d.daemonPids = { before: pidsBefore, after: daemons.map((p) => p.pid) };
      d.daemonCmd = daemons.map((p) => p.cmdline.join(' '));
      expect(d.startsAfter > before, 'the daemon was not restarted');
      const { events, allowed } = queue;
      d.restartEvents = events;
      expect(d.startsAfter - before === allowed, `${d.startsAfter - before} starts where coalescing allows ${allowed}: not coalesced`);
      expect(d.startsAfter - before <= 4, `${d.startsAfter - before} starts for 3 restart requests and a setting change`);
      expect(daemons.length === 1, `${daemons.length} daemons are running`);
      expect(!pidsBefore.includes(daemons[0].pid), 'the old daemon is still the one running');
      expect(d.daemonCmd[0].startsWith(alt), `the daemon does not run the new interpreter ${alt}: ${d.daemonCmd[0]}`);
      // Diagnostics come back from the new daemon.
      const breakLines = markersOf(ws, LOSSES).filter((m) => m.kind === 'graph_break').map((m) => m.line);
      const sq = await waitForSquiggles(page, breakLines, { timeoutMs: WAIT_MS });
      expect(sq.missing.length === 0, `no squiggle on line(s) ${sq.missing.join(', ')} after the restart`);
    });

    await test(t, "the last run's findings come back with a restarted daemon", page, async (d) => {
      const r = await waitForProblems(page, (rows) => rows.some(isRunBreak), 60000);
      d.rows = r.rows.filter((row) => row.file === RUN_SCRIPT);
      expect(r.ok, `the run's finding is gone after the restart: ${JSON.stringify(d.rows)}`);
      await closePanel(page);
    });

    const COMMON = 'models/common.py';
    await test(t, 'the light bulb verifies a fix and applies it; after save the squiggle is gone and the model still runs', page, async (d) => {
      const mark = markersOf(ws, COMMON).find((m) => m.kind === 'graph_break');
      expect(mark, `no graph_break marker in ${COMMON}`);
      // The break in common.py is found by running cnn.py's target: open it, so that the run's
      // finding (not only the static hint on the same line) is on common.py's line.
      await openFile(page, 'models/cnn.py');
      await openFile(page, COMMON);
      const sq = await waitForSquiggles(page, [mark.line], { timeoutMs: WAIT_MS });
      expect(sq.missing.length === 0, `no squiggle on ${COMMON}:${mark.line}`);
      // The cursor inside the break's expression, so that the quick fix gets its diagnostic.
      const col = fs.readFileSync(path.join(ws, COMMON), 'utf8').split('\n')[mark.line - 1].indexOf('x.mean()') + 2;
      await goToLine(page, mark.line, col);
      const rows = page.locator('.action-widget .monaco-list-row');
      const verify = rows.filter({ hasText: 'Verify, then apply' }).first();
      // A static hint can be there before the run's finding: ask again until the light bulb
      // offers the fix (each ask waits for the widget), up to the usual bound.
      const until = Date.now() + WAIT_MS;
      for (;;) {
        await page.keyboard.press('Control+.');
        await rows.first().waitFor({ state: 'visible', timeout: 30000 });
        if (await verify.isVisible()) break;
        d.offeredEarlier = await rows.allTextContents();
        expect(Date.now() < until, `the light bulb never offered "Verify, then apply": ${JSON.stringify(d.offeredEarlier)}`);
        await page.keyboard.press('Escape');
        await page.waitForTimeout(1000);
      }
      d.offered = await rows.allTextContents();
      // cnn.py's target imports common.py: saving common.py analyses cnn.py again.
      const reanalysed = /models\/cnn\.py: [a-z, ]+ in [\d.]+ s \(dependency/;
      const analyses = () => readExtensionLog(prof.userDataDir).split('\n').filter((l) => reanalysed.test(l)).length;
      const analysesBefore = analyses();
      await verify.click();
      // The daemon runs both versions, then sends the edit (workspace/applyEdit) to this buffer.
      await page.waitForFunction(
        () => [...document.querySelectorAll('.editor-group-container.active .view-lines .view-line')].some((e) => (e.textContent ?? '').includes('torch.where(')),
        null,
        { timeout: WAIT_MS },
      );
      await page.keyboard.press('Control+S');
      // The edit alone already moved the squiggle off the rewritten lines: wait for the events
      // that matter, the save on disk (written asynchronously) and the analysis it starts.
      const deadline = Date.now() + WAIT_MS;
      const onDisk = () => fs.readFileSync(path.join(ws, COMMON), 'utf8').includes('torch.where(');
      while (!onDisk() && Date.now() < deadline) await page.waitForTimeout(250);
      expect(onDisk(), 'the verified fix was not saved to the file');
      while (analyses() === analysesBefore && Date.now() < deadline) await page.waitForTimeout(250);
      d.analysesAfterSave = analyses() - analysesBefore;
      expect(d.analysesAfterSave > 0, 'saving the fix did not analyse cnn.py again');
      let seen = await visibleSquiggles(page);
      while (seen[mark.line] && Date.now() < deadline) {
        await page.waitForTimeout(500);
        seen = await visibleSquiggles(page);
      }
      d.squigglesAfter = seen;
      expect(!seen[mark.line], `the squiggle on ${COMMON}:${mark.line} is still there after save`);
      const run = spawnSync(PYTHON, ['-c', 'from models.cnn import compile_example\nfor m, (x,) in compile_example():\n    m(x)\nprint("ran")'], { cwd: ws, encoding: 'utf8', timeout: 300000 });
      d.run = { status: run.status, stdout: run.stdout, stderr: (run.stderr ?? '').slice(-2000) };
      expect(run.status === 0 && run.stdout.includes('ran'), `the fixed model does not run: ${run.stderr}`);
    });

    // Last: a notebook's markers join the Problems panel, whose rows the checks above count.
    await notebookHint(t, page);

    const pyproc = pythonProcesses(cs.proc.pid);
    metrics.trustedPythonProcesses = { daemons: pyproc.daemons.length, others: pyproc.others.length };
  } finally {
    fs.writeFileSync(path.join(RESULTS, 'extension-trusted.log'), readExtensionLog(prof.userDataDir));
    await context.close();
    await cs.stop();
    if (!KEEP) fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A notebook opens in VS Code's notebook editor and its Python cell shows the static hint that
 * `check --checks static` puts on it (the `.item()` line of example_workspace/notebooks/explore.ipynb's
 * third cell): notebook sync reaches the daemon, and the hint lands on the cell. No kernel, no
 * code run. Read from the cell's own editor: the Problems panel draws only the rows in view.
 */
async function notebookHint(t, page) {
  const NOTEBOOK = 'notebooks/explore.ipynb';
  await test(t, 'a notebook opens and its cell shows the static hint (notebook sync; no kernel)', page, async (d) => {
    await openFile(page, NOTEBOOK);
    const cellSquiggles = () =>
      page.evaluate(() => {
        const out = [];
        for (const ed of document.querySelectorAll('.notebook-editor .monaco-editor')) {
          const rows = [...ed.querySelectorAll('.view-lines .view-line')].map((l) => ({
            top: Math.round(l.getBoundingClientRect().top),
            text: l.textContent ?? '',
          }));
          for (const sq of ed.querySelectorAll('.view-overlays [class*="squiggly-"]')) {
            const top = Math.round((sq.parentElement ?? sq).getBoundingClientRect().top);
            const row = rows.find((r) => Math.abs(r.top - top) <= 3);
            out.push({ cls: [...sq.classList].find((c) => c.startsWith('squiggly-')) ?? '', text: row?.text ?? '' });
          }
        }
        return out;
      });
    const deadline = Date.now() + 60000;
    let seen = [];
    while (Date.now() < deadline) {
      seen = await cellSquiggles();
      if (seen.some((s) => s.text.includes('logits.abs().max().item()'))) break;
      await page.waitForTimeout(1000);
    }
    d.squiggles = seen;
    expect(
      seen.some((s) => s.text.includes('logits.abs().max().item()')),
      `no squiggle on the cell's .item() line: ${JSON.stringify(seen)}`,
    );
  });
}

async function scenarioUntrusted(t, browser) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dl-e2e-untrusted-'));
  const ws = copyWorkspace(dir);
  fs.writeFileSync(path.join(ws, 'train_run.py'), TRAIN_SCRIPT);
  const prof = prepareProfile(
    dir,
    baseSettings({
      'security.workspace.trust.enabled': true,
      'security.workspace.trust.startupPrompt': 'never',
      'security.workspace.trust.banner': 'always',
      'security.workspace.trust.untrustedFiles': 'open',
      'dynamoLens.interpreter': PYTHON,
    }),
  );
  const port = await freePort();
  const cs = await startCodeServer({ ...prof, port, logFile: path.join(RESULTS, 'code-server-untrusted.log') });
  log(`code-server on ${cs.url} (workspace trust on, not granted), workspace ${ws}`);
  const { context, page } = await openWorkbench(browser, cs.url, ws);
  const LOSSES = 'models/losses.py';
  try {
    const restricted = await test(t, 'an untrusted workspace opens in Restricted Mode and no analysis runs', page, async (d) => {
      const banner = await page
        .locator('.statusbar-item', { hasText: 'Restricted Mode' })
        .first()
        .waitFor({ timeout: 30000 })
        .then(() => true)
        .catch(() => false);
      d.restrictedModeIndicator = banner;
      expect(banner, 'VS Code does not show Restricted Mode');
      await openFile(page, LOSSES);
      const line = await waitForLog(prof.userDataDir, /activated in \d+ ms.*trusted: false/);
      expect(line, 'the extension did not activate untrusted');
      let text = '';
      const deadline = Date.now() + 30000;
      while (Date.now() < deadline) {
        text = await languageStatusText(page).catch(() => '');
        if (/Restricted Mode/.test(text)) break;
        await page.waitForTimeout(1000);
      }
      d.languageStatus = text;
      expect(/Restricted Mode/.test(text), `the status item does not say Restricted Mode: "${text}"`);
      expect(/not trusted|no code|static|untrusted|restricted/i.test(text.replace(/Restricted Mode/, '')), `the status item does not say why: "${text}"`);
      const started = await waitForLog(prof.userDataDir, /Daemon started in \d+ ms \(trusted: false\)/, 30000);
      d.daemonStarted = started ?? null;
      expect(started, 'the daemon did not start (untrusted)');
      // Give a would-be analysis ample time, watching for any process besides the daemon (a worker
      // would run the workspace's code), then look for results that only running code can give.
      const others = new Set();
      let daemons = 0;
      for (let i = 0; i < 20; i++) {
        const procs = pythonProcesses(cs.proc.pid);
        daemons = Math.max(daemons, procs.daemons.length);
        for (const p of procs.others) others.add(p.cmdline.join(' '));
        await page.waitForTimeout(1000);
      }
      d.pythonProcesses = [...others];
      expect(daemons === 1, `expected one daemon, found ${daemons}`);
      expect(others.size === 0, `Python processes besides the daemon ran: ${JSON.stringify(d.pythonProcesses)}`);
      const rows = await dynamoProblems(page);
      d.problems = rows; // static hints (no code run) are allowed
      const dynamic = rows.filter((r) => ['recompile', 'mismatch'].includes(r.code ?? ''));
      expect(dynamic.length === 0, `findings that need running code were reported: ${JSON.stringify(dynamic)}`);
      await closePanel(page);
      expect(!fs.existsSync(path.join(ws, '.dynamo-lens')), 'an analysis cache was written into the untrusted workspace');
    });

    if (restricted) {
      await test(t, 'Restricted Mode: "Run File with Analysis" is not offered; a loaded trace shows its findings and runs no code', page, async (d) => {
        d.paletteRun = await paletteRows(page, 'Dynamo Lens: Run File');
        expect(!d.paletteRun.some((r) => /Run File with Analysis/.test(r)), `the palette offers Run File in Restricted Mode: ${JSON.stringify(d.paletteRun)}`);
        d.paletteLoad = await paletteRows(page, 'Dynamo Lens: Load Torch');
        expect(d.paletteLoad.some((r) => /Load Torch Trace/.test(r)), `the palette does not offer Load Torch Trace: ${JSON.stringify(d.paletteLoad)}`);
        // The trace of a run made elsewhere (outside VS Code) of a workspace file.
        const trace = path.join(dir, 'trace');
        const made = spawnSync(PYTHON, [path.join(ws, 'train_run.py')], { cwd: ws, env: { ...process.env, TORCH_TRACE: trace }, timeout: 120000 });
        expect(made.status === 0, `recording the trace failed: ${String(made.stderr)}`);
        d.traceFiles = fs.existsSync(trace) ? fs.readdirSync(trace) : [];
        expect(d.traceFiles.length > 0, `the run wrote no trace into ${trace}`);
        // A marker the workspace would write if any of its code ran from here on.
        fs.writeFileSync(path.join(ws, 'train_run.py'), `${TRAIN_SCRIPT}open(${JSON.stringify(path.join(dir, 'RAN'))}, "w").write("ran")\n`);
        await runCommand(page, 'Dynamo Lens: Load Torch Trace…');
        await answerOpenDialog(page, trace);
        const others = new Set();
        const r = await waitForProblems(
          page,
          (rows) => {
            for (const p of pythonProcesses(cs.proc.pid).others) others.add(p.cmdline.join(' '));
            return rows.some((row) => row.file === 'train_run.py' && row.line === TRAIN_BREAK_LINE && /seen in trace/.test(row.text));
          },
          60000,
        );
        d.rows = r.rows.filter((row) => row.file === 'train_run.py');
        d.pythonProcesses = [...others];
        expect(r.ok, `no finding from the loaded trace: ${JSON.stringify(d.rows)}`);
        expect(others.size === 0, `Python processes besides the daemon ran: ${JSON.stringify(d.pythonProcesses)}`);
        expect(!fs.existsSync(path.join(dir, 'RAN')), 'workspace code ran in Restricted Mode');
        await closePanel(page);
      });
    }

    if (restricted) {
      await test(t, 'granting trust restarts the daemon trusted: full analysis without a reload', page, async (d) => {
        await runCommand(page, 'Workspaces: Manage Workspace Trust');
        const button = page.locator('.workspace-trust-editor .monaco-button', { hasText: /^Trust$/ }).first();
        await button.waitFor({ timeout: 20000 });
        await button.click();
        const line = await waitForLog(prof.userDataDir, /Daemon started in \d+ ms \(trusted: true\)/, 60000);
        d.daemonRestarted = line ?? null;
        expect(line, 'the daemon was not restarted trusted');
        await openFile(page, LOSSES);
        // Recompile risks need the code to run: they show only once the analysis is trusted.
        const want = markersOf(ws, LOSSES).filter((m) => m.kind === 'recompile');
        expect(want.length > 0, `no recompile markers in ${LOSSES}`);
        const r = await waitForProblems(page, (rows) => want.every((m) => rows.some((p) => p.line === m.line && p.code === 'recompile')), WAIT_MS);
        d.rows = r.rows;
        expect(r.ok, `no recompile finding on line(s) ${want.map((m) => m.line).join(', ')} after granting trust: ${JSON.stringify(r.rows)}`);
        await closePanel(page);
        const lines = markersOf(ws, LOSSES).map((m) => m.line);
        const s = await waitForSquiggles(page, lines, { timeoutMs: 30000 });
        d.found = s.found;
        expect(s.missing.length === 0, `no squiggle on line(s) ${s.missing.join(', ')} after granting trust`);
      });
    }
  } finally {
    fs.writeFileSync(path.join(RESULTS, 'extension-untrusted.log'), readExtensionLog(prof.userDataDir));
    await context.close();
    await cs.stop();
    if (!KEEP) fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** A Python without torch (for the static-only scenario), or undefined. */
function pythonWithoutTorch() {
  const candidates = [process.env.DL_E2E_NOTORCH_PYTHON, '/usr/bin/python3', 'python3'].filter(Boolean);
  for (const py of candidates) {
    const r = spawnSync(py, ['-c', 'import importlib.util as u, sys; sys.exit(0 if u.find_spec("torch") is None else 3)'], { timeout: 20000 });
    if (r.status === 0) return py;
  }
  return undefined;
}

async function scenarioNoTorch(t, browser) {
  const py = pythonWithoutTorch();
  if (!py) {
    results.push({ name: 'an interpreter without torch (skipped: every candidate has torch)', ok: true, skipped: true, ms: 0, details: {} });
    log('skipped the no-torch scenario: no Python without torch found');
    t.skip('no Python without torch found');
    return;
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dl-e2e-notorch-'));
  const ws = copyWorkspace(dir);
  const prof = prepareProfile(dir, baseSettings({ 'security.workspace.trust.enabled': false, 'dynamoLens.interpreter': py }));
  const port = await freePort();
  const cs = await startCodeServer({ ...prof, port, logFile: path.join(RESULTS, 'code-server-notorch.log') });
  log(`code-server on ${cs.url} with interpreter ${py} (no torch), workspace ${ws}`);
  const { context, page } = await openWorkbench(browser, cs.url, ws);
  const LOSSES = 'models/losses.py';
  try {
    await test(t, `an interpreter without torch (${py}): a message names it, static hints still show`, page, async (d) => {
      await openFile(page, LOSSES);
      const toast = page.locator('.notification-toast', { hasText: 'torch is not installed' }).first();
      const shown = await toast.waitFor({ timeout: 60000 }).then(() => true).catch(() => false);
      d.message = shown ? ((await toast.locator('.notification-list-item-message').first().textContent()) ?? '').replace(/\s+/g, ' ').trim() : null;
      expect(shown, `no "torch is not installed" message (notifications: ${JSON.stringify(await notifications(page))})`);
      expect(d.message.includes(py), `the message does not name the interpreter ${py}: ${d.message}`);
      let text = '';
      const deadline = Date.now() + 30000;
      while (Date.now() < deadline) {
        text = await languageStatusText(page).catch(() => '');
        if (/static only/.test(text)) break;
        await page.waitForTimeout(1000);
      }
      d.languageStatus = text;
      expect(/static only/.test(text), `the status item does not say static only: "${text}"`);
      const breaks = markersOf(ws, LOSSES).filter((m) => m.kind === 'graph_break');
      const r = await waitForProblems(page, (rows) => breaks.every((m) => rows.some((p) => p.line === m.line)), 60000);
      d.rows = r.rows;
      expect(r.ok, `no static hint on line(s) ${breaks.map((m) => m.line).join(', ')}: ${JSON.stringify(r.rows)}`);
      await closePanel(page);
    });
  } finally {
    fs.writeFileSync(path.join(RESULTS, 'extension-notorch.log'), readExtensionLog(prof.userDataDir));
    await context.close();
    await cs.stop();
    if (!KEEP) fs.rmSync(dir, { recursive: true, force: true });
  }
}

function writeBenchResults() {
  // Tests never rewrite tracked files: the committed results change only when asked for.
  const file = flag('--bench-file') ? path.join(ROOT, 'bench', 'extension', 'RESULTS.md') : path.join(RESULTS, 'extension-timings.md');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const fmt = (ms) => (ms === undefined ? 'n/a' : ms >= 10000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`);
  const cpus = os.cpus();
  const text = `# Extension timings

Measured by the end-to-end tests in a real VS Code (code-server 4.139.1, VS Code 1.139) driven
through Chromium, with the packaged \`.vsix\` and the real daemon, on a fresh profile and a fresh
copy of \`example_workspace\` (empty Dynamo Lens cache; torch's own inductor cache in
\`/tmp/torchinductor_$USER\` is whatever earlier runs left).

Command: \`bash scripts/extension/test.sh -- --bench-file\` (or \`node extension/test/e2e/run.mjs --bench-file\`
after \`bash scripts/extension/setup.sh\`).

| measure | value |
| --- | --- |
| extension activation as VS Code sees it (extension host begins activating → \`activate()\` returns) | ${fmt(metrics.vscodeActivationMs)} |
| first line of \`out/extension.js\` runs → \`activate()\` returns | ${fmt(metrics.activationMs)} |
| of which evaluating the bundle (480 KiB, vscode-languageclient included) | ${fmt(metrics.codeLoadMs)} |
| of which \`activate()\` itself (the daemon starts asynchronously) | ${fmt(metrics.activateFnMs)} |
| Enter in Quick Open on \`models/losses.py\` → extension activated | ${fmt(metrics.openToActivatedMs)} |
| daemon start (interpreter + \`doctor\` + LSP initialize) | ${fmt(metrics.daemonStartMs)} |
| Enter in Quick Open on \`models/losses.py\` → first squiggle (line 33; a static hint may come before the run) | ${fmt(metrics.openToFirstSquiggleMs)} |
| Enter in Quick Open on \`models/losses.py\` → first finding that needs the code to run (recompile risk, line 12; worker start, torch import, compiles) | ${fmt(metrics.openToDynamicFindingMs)} |
| cancel a running max-autotune benchmark → daemon idle again | ${fmt(metrics.idleAfterCancelMs)} |
| "Benchmark target…" → result panel (\`models/cnn.py::compile_example\`, cpu, default mode) | ${fmt(metrics.benchmarkMs)} |

Machine: ${cpus.length} × ${cpus[0]?.model ?? 'unknown CPU'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${os.type()} ${os.release()};
interpreter \`${path.relative(ROOT, PYTHON) || PYTHON}\`. Measured ${new Date().toISOString()}.
Test results: ${results.filter((r) => r.ok).length}/${results.length} passed (details in \`out/e2e-results/results.json\`).

One run, written when the e2e tests run with --bench-file. The CPU is shared with whatever else runs on the machine,
so the figures move from run to run (the analysis ones most: they include importing torch and
compiling); compare runs on an idle machine.
`;
  fs.writeFileSync(file, text);
  log(`wrote ${path.relative(ROOT, file)}`);
}

async function main(t) {
  checkInstalled();
  const vsix = vsixPath();
  if (!fs.existsSync(vsix)) throw new Error(`${vsix} is missing; run scripts/extension/setup.sh (or npm run package)`);
  fs.rmSync(RESULTS, { recursive: true, force: true });
  fs.mkdirSync(RESULTS, { recursive: true });
  log(`vsix ${path.relative(ROOT, vsix)}; interpreter ${PYTHON}; results in ${RESULTS}`);
  const browser = await launchBrowser();
  try {
    for (const s of SCENARIOS) {
      if (s === 'trusted') await t.test('trusted scenario', (st) => scenarioTrusted(st, browser));
      else if (s === 'untrusted') await t.test('untrusted scenario', (st) => scenarioUntrusted(st, browser));
      else if (s === 'notorch') await t.test('notorch scenario', (st) => scenarioNoTorch(st, browser));
      else throw new Error(`unknown scenario ${s}`);
    }
  } finally {
    await browser.close();
  }
  const summary = { ok: results.every((r) => r.ok), seconds: (Date.now() - started) / 1000, metrics, results };
  fs.writeFileSync(path.join(RESULTS, 'results.json'), JSON.stringify(summary, null, 2));
  if (!SMOKE && SCENARIOS.includes('trusted')) writeBenchResults();
  const failed = results.filter((r) => !r.ok);
  log(`${results.length - failed.length}/${results.length} passed in ${summary.seconds.toFixed(0)} s; metrics ${JSON.stringify(metrics)}`);
  for (const f of failed) log(`FAILED: ${f.name}: ${f.error}`);
  if (results.length === 0) throw new Error('no end-to-end check ran');
}

// node's test runner reports each check (a subtest of its scenario) and sets the exit status.
nodeTest('Dynamo Lens in a real VS Code (code-server)', (t) => main(t));
