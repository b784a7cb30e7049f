// Headless Chromium for c960's page tests: the report file now, the coordinator's dashboard (a
// URL) later. Debian's /usr/bin/chromium driven by playwright-core (no browser download), a
// fresh profile per page, every request that is not the page itself refused and recorded, console
// errors and page errors collected, and a screenshot saved when a check fails.
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export const CHROMIUM = process.env.C960_CHROMIUM || '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];
// A test coordinator's HTTPS certificate is signed by a CA made for the test, which Chromium does
// not know: $C960_TLS_SPKI (base64 SHA-256 of the server key's SubjectPublicKeyInfo) makes it
// accept that one key, and no other certificate error.
if (process.env.C960_TLS_SPKI) CHROMIUM_ARGS.push(`--ignore-certificate-errors-spki-list=${process.env.C960_TLS_SPKI}`);

// A page's address: a URL as given, or a file path as a file:// URL.
export function addressOf(target) {
  return /^[a-z]+:\/\//i.test(target) ? target : pathToFileURL(path.resolve(target)).href;
}

// Opens `target` (URL or file) and runs `check(page, problems)`. `allowedOrigins` are origins the
// page may load from besides its own (none for a self-contained report). On any failure, a
// screenshot and the collected problems go to `artifactsDir/name.{png,txt}`; the error is rethrown.
// `login`: a token typed into the coordinator's login form first (a URL target only), as a person
// logs in; the form then leads to the target.
export async function withPage(target, { name, artifactsDir, viewport = { width: 1400, height: 1000 },
                                         allowedOrigins = [], login = '' }, check) {
  const address = addressOf(target);
  const own = new URL(address);
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'c960-chromium-'));
  const problems = { console: [], page: [], requests: [] };
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport,
  });
  let page;
  try {
    // Only the page's own origin (or its own file) may be fetched: a report must work offline.
    await context.route('**/*', (route) => {
      const u = new URL(route.request().url());
      const ok = u.protocol === 'data:' || (u.protocol === 'file:' ? u.href === own.href : u.origin === own.origin ||
                 allowedOrigins.includes(u.origin));
      if (ok) return route.continue();
      problems.requests.push(route.request().url());
      return route.abort();
    });
    page = context.pages()[0] || await context.newPage();
    page.on('console', (m) => { if (m.type() === 'error') problems.console.push(m.text()); });
    page.on('pageerror', (e) => problems.page.push(String(e)));
    let response;
    if (login) {
      await logIn(page, own, login);
      response = await page.goto(address, { waitUntil: 'load' });
    } else {
      response = await page.goto(address, { waitUntil: 'load' });
    }
    if (response && !response.ok()) throw new Error(`${address}: HTTP ${response.status()}`);
    await check(page, problems);
  } catch (err) {
    if (page && artifactsDir) {
      fs.mkdirSync(artifactsDir, { recursive: true });
      const shot = path.join(artifactsDir, `${name}.png`);
      await page.screenshot({ path: shot, fullPage: true }).catch(() => {});
      fs.writeFileSync(path.join(artifactsDir, `${name}.txt`),
                       `${err.stack || err}\n\nproblems: ${JSON.stringify(problems, null, 2)}\n`);
      err.message += ` (screenshot: ${shot})`;
    }
    throw err;
  } finally {
    await context.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
}

// Problems a page must not have: console errors, uncaught exceptions, refused requests.
// Logs in through the login form of `url`'s coordinator with `token`; throws with the form's
// message when it is refused.
export async function logIn(page, url, token) {
  const target = new URL(url);
  const form = await page.goto(`${target.origin}/login?next=${encodeURIComponent(target.pathname)}`,
                               { waitUntil: 'load' });
  if (!form || !form.ok()) throw new Error(`${target.origin}/login: HTTP ${form && form.status()}`);
  await page.fill('#token', token);
  const [answer] = await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('button[type=submit]')]);
  if (!answer || !answer.ok()) {
    const message = await page.locator('.error').textContent().catch(() => '');
    throw new Error(`login refused: HTTP ${answer && answer.status()}: ${message}`);
  }
}

export function noProblems(problems) {
  const all = [...problems.console.map((m) => `console: ${m}`), ...problems.page.map((m) => `page: ${m}`),
               ...problems.requests.map((u) => `request to ${u}`)];
  if (all.length) throw new Error(`the page had problems:\n  ${all.join('\n  ')}`);
}

// The heatmap's checks, shared with the dashboard: 960 cells; hovering cell `sp` shows a tooltip
// whose text is returned for the caller to compare with its own numbers.
export async function heatmapTooltip(page, sp, selector = '.c960-heatmap') {
  const cells = await page.locator(`${selector} .hm-cell`).count();
  if (cells !== 960) throw new Error(`the heatmap has ${cells} cells, not 960`);
  await page.hover(`${selector} .hm-cell[data-sp="${sp}"]`);
  const tip = page.locator(`${selector} .hm-tooltip`);
  await tip.waitFor({ state: 'visible', timeout: 5000 });
  return (await tip.innerText()).trim();
}

// Charts drawn with Chart.js: the canvas has a chart with data, and pixels that are not blank.
export async function chartDrawn(page, canvasId) {
  return page.evaluate((id) => {
    const canvas = document.getElementById(id);
    if (!canvas) return `no canvas #${id}`;
    const chart = window.Chart && window.Chart.getChart(canvas);
    if (!chart) return `no chart on #${id}`;
    const points = chart.data.datasets.reduce((n, d) => n + d.data.length, 0);
    if (!points) return `chart #${id} has no data`;
    const ctx = canvas.getContext('2d');
    const { data } = ctx.getImageData(0, 0, canvas.width, canvas.height);
    let painted = 0;
    for (let i = 3; i < data.length; i += 4) if (data[i] !== 0) painted++;
    if (painted < 500) return `chart #${id} has only ${painted} painted pixels`;
    return '';
  }, canvasId);
}
