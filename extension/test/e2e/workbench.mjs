// Drives the code-server workbench in Debian's Chromium with playwright-core.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

export async function launchBrowser() {
  return await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-dev-shm-usage'],
  });
}

export async function openWorkbench(browser, url, folder, { viewport = { width: 1600, height: 1000 } } = {}) {
  const context = await browser.newContext({ viewport, permissions: ['clipboard-read', 'clipboard-write'] });
  const page = await context.newPage();
  await page.goto(`${url}/?folder=${encodeURIComponent(folder)}`, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('.monaco-workbench .part.editor', { timeout: 90000 });
  await page.waitForSelector('.part.statusbar', { timeout: 60000 });
  return { context, page };
}

export async function screenshot(page, dir, name) {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.png`);
  await page.screenshot({ path: file });
  return file;
}

const quickInput = '.quick-input-widget';

async function openQuickInput(page, prefix) {
  const input = page.locator(`${quickInput} .quick-input-box input`);
  // F1 can be swallowed: by a webview holding focus, or by a quick input still closing (F1
  // toggles it). Retry with the focus back on the workbench, alternating the two shortcuts.
  const keys = ['F1', 'Control+Shift+P'];
  for (let attempt = 0; attempt < 6; attempt++) {
    await page.keyboard.press('Escape');
    if (attempt > 0) {
      await page.locator('.monaco-workbench .part.statusbar').first().click({ timeout: 2000 }).catch(() => undefined);
      await page.waitForTimeout(300);
    }
    await page.keyboard.press(keys[attempt % keys.length]);
    try {
      await input.waitFor({ state: 'visible', timeout: 3000 });
      await input.fill(prefix);
      return input;
    } catch {
      // try again
    }
  }
  await input.waitFor({ state: 'visible', timeout: 5000 });
  await input.fill(prefix);
  return input;
}

/** Opens a workspace file through Quick Open. */
export async function openFile(page, relPath) {
  const input = await openQuickInput(page, relPath);
  const base = path.basename(relPath);
  await page
    .locator(`${quickInput} .monaco-list-row`, { hasText: base })
    .first()
    .waitFor({ state: 'visible', timeout: 20000 });
  const opened = Date.now();
  await input.press('Enter');
  await page.locator(`.tabs-container .tab.active[data-resource-name="${base}"]`).first().waitFor({ timeout: 20000 });
  // The window title names the active editor: make sure it is this file, not a webview beside it.
  await page.waitForFunction((b) => document.title.startsWith(b), base, { timeout: 20000 });
  // A notebook opens in the notebook editor (its cells' editors come as they scroll in).
  const editor = relPath.endsWith('.ipynb') ? '.notebook-editor' : '.editor-instance .monaco-editor .view-lines';
  await page.locator(editor).first().waitFor({ timeout: 20000 });
  return opened; // when Enter was pressed in Quick Open
}

/** Runs a palette command by its title ("Dynamo Lens: Show logs"). */
export async function runCommand(page, title) {
  const input = await openQuickInput(page, `>${title}`);
  const row = page.locator(`${quickInput} .monaco-list-row`, { hasText: title }).first();
  await row.waitFor({ state: 'visible', timeout: 20000 });
  await input.press('Enter');
}

/** The visible quick pick (title, rows), or undefined. */
export async function quickPickState(page) {
  const widget = page.locator(quickInput);
  if (!(await widget.isVisible())) return undefined;
  const title = (await widget.locator('.quick-input-title').textContent().catch(() => '')) ?? '';
  const rows = await widget.locator('.monaco-list-row').allTextContents();
  return { title: title.trim(), rows };
}

/** Go to line N (1-based; optionally column C) in the active editor: done when the status bar says "Ln N, Col". */
export async function goToLine(page, line, column) {
  const input = await openQuickInput(page, column ? `:${line}:${column}` : `:${line}`);
  await input.press('Enter');
  await page.waitForFunction(
    (want) => [...document.querySelectorAll('.statusbar-item')].some((e) => new RegExp(`Ln ${want}, Col`).test(e.textContent ?? '')),
    line,
    { timeout: 20000 },
  );
}

/**
 * Squiggles visible in the active editor, by 1-based line: {line: ['squiggly-error', ...]}.
 * Monaco renders one overlay row per visible line; the line number is in the margin row at the same top.
 */
export async function visibleSquiggles(page) {
  return await page.evaluate(() => {
    const editor = document.querySelector('.editor-group-container.active .monaco-editor') ?? document.querySelector('.monaco-editor');
    if (!editor) return {};
    const topOf = (el) => Math.round(el.getBoundingClientRect().top);
    const lineAt = new Map();
    for (const n of editor.querySelectorAll('.margin-view-overlays .line-numbers')) {
      const num = parseInt(n.textContent ?? '', 10);
      if (!Number.isNaN(num)) lineAt.set(topOf(n.parentElement ?? n), num);
    }
    const out = {};
    for (const s of editor.querySelectorAll('.view-overlays [class*="squiggly-"]')) {
      const row = s.parentElement ?? s;
      const top = topOf(row);
      let line = lineAt.get(top);
      if (line === undefined) {
        // Nearest margin row (sub-pixel differences).
        let best;
        for (const [t, l] of lineAt) if (best === undefined || Math.abs(t - top) < Math.abs(best[0] - top)) best = [t, l];
        if (best && Math.abs(best[0] - top) <= 3) line = best[1];
      }
      if (line === undefined) continue;
      const cls = [...s.classList].find((c) => c.startsWith('squiggly-') && c !== 'squiggly-inline-unnecessary') ?? 'squiggly';
      (out[line] ??= []).push(cls);
    }
    return out;
  });
}

/** Waits until each given line of the active editor shows a squiggle (scrolling to each). */
export async function waitForSquiggles(page, lines, { timeoutMs = 240000, pollMs = 1000 } = {}) {
  const deadline = Date.now() + timeoutMs;
  const found = {};
  const missing = new Set(lines);
  while (missing.size > 0 && Date.now() < deadline) {
    for (const line of [...missing]) {
      const seen = await visibleSquiggles(page);
      if (!(line in seen)) {
        await goToLine(page, line);
      }
      const again = await visibleSquiggles(page);
      if (line in again) {
        found[line] = again[line];
        missing.delete(line);
      }
    }
    if (missing.size > 0) await page.waitForTimeout(pollMs);
  }
  return { found, missing: [...missing] };
}

/** Opens the Problems panel and returns its rows' texts (file rows and marker rows). */
export async function problems(page) {
  await page.keyboard.press('Escape');
  await runCommand(page, 'View: Focus Problems (Errors, Warnings, Infos)').catch(async () => {
    await page.keyboard.press('Control+Shift+M');
  });
  const panel = page.locator('.markers-panel');
  await panel.waitFor({ state: 'visible', timeout: 15000 });
  await page.waitForTimeout(500);
  return await panel.locator('.monaco-list-row').evaluateAll((rows) =>
    rows.map((r) => ({
      text: (r.textContent ?? '').replace(/\s+/g, ' ').trim(),
      aria: r.getAttribute('aria-label') ?? '',
      severity: ['error', 'warning', 'info'].find((k) => r.querySelector(`.codicon-${k}, .codicon-${k === 'info' ? 'info' : k}`)) ?? '',
    })),
  );
}

/**
 * Hover at the first word of `line` in the active editor, via the keyboard: go to the line, then
 * Show Hover. The gesture is repeated until the hover shows (or `timeoutMs` passes): a hover asked
 * for while focus was still moving to the editor (after a click in a tree view), or while the
 * daemon was busy answering another request, shows nothing, as it would for a user, who asks
 * again. A hover that never shows fails with where the cursor was.
 */
export async function hoverAtLine(page, line, { timeoutMs = 60000, attemptMs = 8000 } = {}) {
  const hover = page.locator('.monaco-hover:not(.hidden) .monaco-hover-content, .monaco-resizable-hover .monaco-hover-content').first();
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    await goToLine(page, line);
    await page.keyboard.press('End');
    await page.keyboard.press('Home');
    await page.keyboard.press('Home');
    // Move onto the first word (the keyword or name) so there is something to hover.
    await page.keyboard.press('Control+ArrowRight');
    await page.keyboard.press('ArrowLeft');
    await runCommand(page, 'Show or Focus Hover');
    const left = deadline - Date.now();
    try {
      await hover.waitFor({ state: 'visible', timeout: Math.max(1000, Math.min(attemptMs, left)) });
      return hover;
    } catch (e) {
      if (Date.now() >= deadline) {
        const where = await page
          .evaluate(() => `${document.title} | ${[...document.querySelectorAll('.statusbar-item')].map((x) => x.textContent ?? '').find((t) => /Ln \d+, Col/.test(t)) ?? '?'}`)
          .catch(() => '?');
        throw new Error(`no hover at line ${line} after ${attempt} attempt(s) (editor: ${where}): ${e instanceof Error ? e.message.split('\n')[0] : e}`);
      }
      await page.keyboard.press('Escape');
    }
  }
}

/** The language status hover ("{}" entry in the status bar): its text, after hovering it. */
export async function languageStatusText(page) {
  const entry = page.locator('#status\\.languageStatus, .statusbar-item[id*="languageStatus"]').first();
  await entry.waitFor({ state: 'visible', timeout: 30000 });
  // Notification toasts sit over the right end of the status bar: clear them first.
  if ((await page.locator('.notification-toast').count()) > 0) {
    await runCommand(page, 'Notifications: Clear All Notifications').catch(() => undefined);
    await page.keyboard.press('Escape');
  }
  await page.mouse.move(5, 5);
  await entry.hover();
  const hover = page.locator('.language-status-hover, .monaco-hover .hover-language-status').first();
  await hover.waitFor({ state: 'visible', timeout: 10000 });
  const text = (await hover.textContent()) ?? '';
  await page.mouse.move(5, 5);
  return text.replace(/\s+/g, ' ').trim();
}

/** Text of visible notification toasts. */
export async function notifications(page) {
  return await page.locator('.notification-toast .notification-list-item-message').allTextContents();
}

/** The frame of the webview whose document contains `selector`. */
export async function findWebviewFrame(page, selector, { timeoutMs = 30000 } = {}) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    for (const f of page.frames()) {
      try {
        if ((await f.locator(selector).count()) > 0) return f;
      } catch {
        // detached
      }
    }
    await page.waitForTimeout(500);
  }
  return undefined;
}

/**
 * The command palette's rows for a filter text (then closed): what it offers. Read once the list
 * is filtered: every row shows the text's first word (the prefix of our commands), or the palette
 * says nothing matches.
 */
export async function paletteRows(page, text) {
  const input = await openQuickInput(page, `>${text}`);
  const word = text.split(/\s+/)[0];
  await page.waitForFunction(
    ({ sel, w }) => {
      const widget = document.querySelector(sel);
      if (!widget) return false;
      const rows = [...widget.querySelectorAll('.monaco-list-row')].map((r) => r.textContent ?? '');
      const message = widget.querySelector('.quick-input-message')?.textContent ?? '';
      return (rows.length > 0 && rows.every((r) => r.includes(w))) || /no match/i.test(message) || (rows.length === 0 && /no/i.test(widget.textContent ?? ''));
    },
    { sel: quickInput, w: word },
    { timeout: 20000 },
  );
  const rows = await page.locator(`${quickInput} .monaco-list-row`).allTextContents();
  await input.press('Escape');
  return rows.map((r) => r.replace(/\s+/g, ' ').trim());
}

/** Answers VS Code's own (simple, quick-input) open dialog with a path. */
export async function answerOpenDialog(page, target, { timeoutMs = 20000 } = {}) {
  const sel = `${quickInput} .quick-input-box input`;
  const input = page.locator(sel);
  await input.waitFor({ state: 'visible', timeout: timeoutMs });
  // The dialog lists its starting folder asynchronously and, when that listing lands, writes the
  // folder's path into the box, over anything typed before. So type only once the listing is there.
  await page.waitForFunction(
    ({ s, w }) => (document.querySelector(s)?.value ?? '') !== '' && document.querySelectorAll(`${w} .monaco-list-row`).length > 0,
    { s: sel, w: quickInput },
    { timeout: timeoutMs },
  );
  // Then type the path, and press Enter only once the dialog has followed it: the box still holds
  // it and the list shows the folder that holds it (else Enter accepts the folder listed before,
  // whatever the box says). Typing again covers a late rewrite of the box.
  const base = target.replace(/\/+$/, '').split('/').pop();
  const deadline = Date.now() + timeoutMs;
  let followed = false;
  while (!followed && Date.now() < deadline) {
    if ((await input.inputValue().catch(() => '')) !== target) await input.fill(target);
    followed = await page
      .waitForFunction(
        ({ s, w, t, b }) => {
          if (document.querySelector(s)?.value !== t) return false;
          return [...document.querySelectorAll(`${w} .monaco-list-row`)].some((r) => (r.textContent ?? '').trim() === b);
        },
        { s: sel, w: quickInput, t: target, b: base },
        { timeout: 3000 },
      )
      .then(() => true)
      .catch(() => false);
  }
  if (!followed) throw new Error(`the Open dialog did not follow the typed path ${target}: box "${await input.inputValue().catch(() => '')}"`);
  await input.press('Enter');
  // Enter on a folder may first navigate into it (the value becomes "folder/"); Enter again
  // accepts it. Done when the dialog closes.
  let again = false;
  while (Date.now() < deadline + timeoutMs) {
    if (!(await page.locator(quickInput).isVisible())) return;
    const value = await input.inputValue().catch(() => '');
    if (!again && value.endsWith('/') && value.replace(/\/+$/, '') === target.replace(/\/+$/, '')) {
      again = true;
      await input.press('Enter');
    }
    await page.waitForTimeout(200);
  }
  throw new Error(`the Open dialog did not close after accepting ${target}`);
}
