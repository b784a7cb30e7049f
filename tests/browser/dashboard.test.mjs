// The coordinator's live dashboard in headless Chromium, over HTTPS, each page reached by logging
// in with a token through the login form: no console errors and no request beyond the
// coordinator, the jobs and workers tables, a self-play job's page following the job as units
// complete (without reloading), its 960-cell heatmap with a tooltip whose numbers match the
// results `c960 results` gives (gRPC, not the page's JSON API), a perft job's per-position counts
// and first-move divide, the downloads (the bytes `c960 results` writes), and who may do what: a
// submitter sees its own jobs only and cancels them from the job page, a worker's token cannot
// log in, a cancel not sent by the page is refused; the login gives the browser a session cookie
// (HttpOnly, not the token) that the logout ends in the coordinator. Run by tests/browser/dashboard.sh, which
// starts the cluster and sets:
//   C960_DASHBOARD_URL            the coordinator's HTTPS side
//   C960_CLI, C960_COORDINATOR    the c960 binary and the coordinator's gRPC address (with
//                                 C960_TLS_CA and C960_TOKEN, the admin's, for the tool)
//   C960_PERFT_JOB, C960_SELFPLAY_JOB   a perft job (depth 3, all 960) and a running self-play job
//   C960_RANKED_JOB               a small self-play job with enough games to rank its positions
//   C960_WAITING_JOB              the submitter's perft job, which one worker cannot verify
//   C960_TOKEN_ADMIN, _READER, _SUBMITTER, _OTHER, _WORKER   a token per role (two submitters)
//   C960_ARTIFACTS                where screenshots of failures go
//   C960_SCREENSHOTS              optional: where screenshots of the passing pages go (docs)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { withPage, noProblems, heatmapTooltip } from './harness.mjs';

const base = process.env.C960_DASHBOARD_URL;
const artifactsDir = process.env.C960_ARTIFACTS || 'browser-artifacts';
const screenshots = process.env.C960_SCREENSHOTS || '';
const cli = process.env.C960_CLI, coordinator = process.env.C960_COORDINATOR;
const perftJob = process.env.C960_PERFT_JOB, selfplayJob = process.env.C960_SELFPLAY_JOB;
const rankedJob = process.env.C960_RANKED_JOB, waitingJob = process.env.C960_WAITING_JOB;
const token = {
  admin: process.env.C960_TOKEN_ADMIN, reader: process.env.C960_TOKEN_READER,
  submitter: process.env.C960_TOKEN_SUBMITTER, other: process.env.C960_TOKEN_OTHER, worker: process.env.C960_TOKEN_WORKER,
};
// "2026-11-30T16:38:29Z": how the pages write times (UTC), as the c960 tool does.
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

// Rows of `c960 results JOB --format csv [--divide]`, by the header's names.
function results(job, ...extra) {
  const text = execFileSync(cli, ['results', job, '--coordinator', coordinator, '--format', 'csv', ...extra],
                            { encoding: 'utf8', maxBuffer: 64 << 20 });
  const [header, ...lines] = text.trim().split('\n');
  const names = header.split(',');
  // FENs have no commas; every other field is a number or a word.
  return lines.map((l) => Object.fromEntries(l.split(',').map((v, i) => [names[i], v])));
}

// What `c960 results JOB ARGS...` writes to stdout, as bytes.
function cliOutput(...args) {
  return execFileSync(cli, ['results', ...args, '--coordinator', coordinator], { maxBuffer: 256 << 20 });
}

function jobState(job) {
  const text = execFileSync(cli, ['status', job, '--coordinator', coordinator], { encoding: 'utf8' });
  return text;
}

async function shoot(page, name) {
  if (!screenshots) return;
  fs.mkdirSync(screenshots, { recursive: true });
  await page.screenshot({ path: path.join(screenshots, `${name}.png`), fullPage: false });
}

const unitsDone = (page) => page.evaluate(() => Number(document.body.dataset.unitsDone || -1));

test('dashboard: jobs with progress bars, workers, no errors', async () => {
  await withPage(`${base}/`, { name: 'dashboard', artifactsDir, login: token.reader }, async (page, problems) => {
    await page.waitForFunction(() => Number(document.body.dataset.rendered || 0) >= 1, null, { timeout: 15000 });
    for (const job of [perftJob, selfplayJob]) {
      const row = page.locator(`table.jobs tr[data-job="${job}"]`);
      assert.equal(await row.count(), 1, `a row for ${job}`);
      assert.equal(await row.locator('.progress, [role="progressbar"]').count() >= 1, true, `a progress bar for ${job}`);
    }
    await page.waitForSelector('table.workers tr[data-worker="worker/browser-test-worker"]', { timeout: 15000 });
    const summary = await page.locator('#summary').innerText();
    assert.match(summary, /1 worker alive/);
    // A perft job's kind says its depth; times are ISO 8601 UTC; the progress text is light on
    // the fill and dark beside it.
    const perftRow = page.locator(`table.jobs tr[data-job="${perftJob}"]`);
    assert.equal(await perftRow.locator('td').nth(1).textContent(), 'perft depth 3');
    assert.match(await perftRow.locator('td').nth(8).textContent(), ISO);
    assert.match(await page.locator('#updated').textContent(), /^updated \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    const colors = await perftRow.evaluate((tr) => [...tr.querySelectorAll('.bar-text')].map((e) => getComputedStyle(e).color));
    assert.deepEqual(colors, ['rgb(29, 35, 48)', 'rgb(255, 255, 255)']);
    // The submitter's job waits for a second worker: the table says so under its row.
    const notice = page.locator(`table.jobs tr[data-notice-for="${waitingJob}"] td.notice`);
    await notice.waitFor({ timeout: 15000 });
    assert.match(await notice.textContent(), /checked by a second owner/);
    assert.equal(await notice.isVisible(), true);
    // ... and its ETA shows no made-up time.
    assert.match(await page.locator(`table.jobs tr[data-job="${waitingJob}"] td`).nth(6).textContent(),
                 /^(waiting on verification|none while waiting)$/);
    // The table follows the running job without a reload.
    const first = Number(await page.locator(`tr[data-job="${selfplayJob}"]`).getAttribute('data-units-done'));
    await page.waitForFunction(
      ({ job, n }) => Number(document.querySelector(`tr[data-job="${job}"]`)?.dataset.unitsDone) > n,
      { job: selfplayJob, n: first }, { timeout: 30000 });
    await shoot(page, 'dashboard');
    noProblems(problems);
  });
});

test('self-play job page: follows the job live, 960 heatmap cells, tooltips with the right numbers', async () => {
  await withPage(`${base}/jobs/${selfplayJob}`, { name: 'job-selfplay', artifactsDir, login: token.reader },
                 async (page, problems) => {
    await page.waitForFunction(() => Number(document.body.dataset.rendered || 0) >= 1, null, { timeout: 15000 });
    assert.equal(await page.locator('#heatmap .hm-cell').count(), 960);
    // The page updates while the job runs: more units done, the same document (no reload).
    const before = await unitsDone(page);
    const state = await page.evaluate(() => document.body.dataset.state);
    assert.equal(state, 'running', `the self-play job should still run when its page opens (${jobState(selfplayJob)})`);
    // The spec line: random plies and the verify mode in words; a reader has no cancel button.
    const spec = await page.locator('p.spec').textContent();
    assert.match(spec, /, 6 random plies, /);
    assert.match(spec, / · verify off/);
    assert.equal(await page.locator('button.cancel').count(), 0);
    await page.evaluate(() => { window.__sameDocument = true; });
    await page.waitForFunction((n) => Number(document.body.dataset.unitsDone) > n, before, { timeout: 30000 });
    assert.equal(await page.evaluate(() => window.__sameDocument), true, 'the page reloaded instead of updating');
    // Then to the end; the last poll shows the finished results.
    await page.waitForFunction(() => document.body.dataset.state === 'succeeded', null, { timeout: 240000 });
    // Tooltips and the total against `c960 results` (over gRPC): the classical position, a decisive one.
    const all = results(selfplayJob);
    const rows = all.filter((r) => r.sp !== 'all');
    assert.equal(rows.length, 960);
    const games = Number(all.find((r) => r.sp === 'all').games).toLocaleString('en');
    await page.waitForFunction((g) => (document.getElementById('total')?.textContent || '').includes(`over ${g} games`),
                               games, { timeout: 15000 });
    assert.equal(await page.locator('#heatmap .hm-cell').count(), 960);
    const decisive = rows.find((r) => r.white_wins !== '0' || r.black_wins !== '0') || rows[1];
    for (const r of [rows.find((x) => x.sp === '518'), decisive]) {
      const tip = await heatmapTooltip(page, r.sp, '#heatmap');
      const backrank = r.fen.split(' ')[0].split('/')[7];
      assert.ok(tip.includes(`${r.sp} ${backrank.toUpperCase()}`), `tooltip "${tip}" names ${r.sp} ${backrank}`);
      assert.ok(tip.includes(`games ${r.games} (W ${r.white_wins}, D ${r.draws}, L ${r.black_wins})`),
                `tooltip "${tip}" has the counts of ${JSON.stringify(r)}`);
      // The page rounds to 3 decimals, the CSV to 4: equal within the rounding.
      const m = tip.match(/score (\d\.\d{3}), 95% interval (\d\.\d{3})-(\d\.\d{3})/);
      assert.ok(m, `tooltip "${tip}" has a score and an interval`);
      for (const [shown, csv] of [[m[1], r.score], [m[2], r.score_lo], [m[3], r.score_hi]])
        assert.ok(Math.abs(Number(shown) - Number(csv)) <= 0.00051, `tooltip "${tip}": ${shown} vs ${csv} of ${r.sp}`);
    }
    // Two games a position: nothing is ranked, and the page says why instead of listing luck.
    assert.match(await page.locator('#leaders-note').textContent(), /^Not ranked yet: ranks need 20 games a position/);
    assert.equal(await page.locator('table.leaders tbody tr').count(), 0);
    assert.equal(await page.locator('table.leaders').isVisible(), false, 'no empty leaders table');
    await page.hover('#heatmap .hm-cell[data-sp="518"]');
    await shoot(page, 'dashboard-selfplay');
    noProblems(problems);
  });
});

test('self-play leaders: ranked by the shrunk score, as c960 results ranks them', async () => {
  await withPage(`${base}/jobs/${rankedJob}`, { name: 'job-ranked', artifactsDir, login: token.admin },
                 async (page, problems) => {
    await page.waitForFunction(() => document.body.dataset.state === 'succeeded', null, { timeout: 120000 });
    const rows = results(rankedJob).filter((r) => r.sp !== 'all').sort((a, b) => Number(a.rank) - Number(b.rank));
    assert.equal(rows.length, 5);
    await page.waitForFunction(() => document.querySelectorAll('table.leaders tbody tr').length === 5, null,
                               { timeout: 15000 });
    const shown = await page.$$eval('table.leaders tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
    shown.forEach((cells, i) => {
      const r = rows[i];
      assert.equal(cells[0], `#${r.rank}`);
      assert.equal(cells[1], r.sp);
      const m = cells[6].match(/^(\d\.\d{3}) \[(\d\.\d{3})-(\d\.\d{3})\]$/);
      assert.ok(m, `shrunk cell "${cells[6]}"`);
      for (const [v, csv] of [[m[1], r.shrunk], [m[2], r.shrunk_lo], [m[3], r.shrunk_hi]])
        assert.ok(Math.abs(Number(v) - Number(csv)) <= 0.00051, `position ${r.sp}: ${v} vs ${csv}`);
      assert.equal(cells[7], `${r.rank_lo}-${r.rank_hi}`);
    });
    assert.match(await page.locator('#leaders-note').textContent(), /^By White's score shrunk toward the positions' mean/);
    assert.equal(await page.locator('table.leaders').isVisible(), true);
    // The caption says positions without games are hatched: they are (stripes over the colour).
    assert.match(await page.locator('#heatmap-section .caption').first().textContent(), /hatched: no games yet/);
    const looks = await page.$$eval('#heatmap .hm-cell', (cells) => cells.map((c) => [
      c.dataset.sp, c.classList.contains('hm-empty'), getComputedStyle(c).backgroundImage]));
    for (const [sp, empty, image] of looks) {
      assert.equal(empty, Number(sp) > 4, `cell ${sp}: hm-empty`);
      assert.equal(image.includes('repeating-linear-gradient'), empty, `cell ${sp}: background-image ${image}`);
    }
    noProblems(problems);
  });
});

test('perft job page: counts per position and the first-move divide', async () => {
  await withPage(`${base}/jobs/${perftJob}`, { name: 'job-perft', artifactsDir, login: token.admin },
                 async (page, problems) => {
    await page.waitForFunction(() => document.body.dataset.state === 'succeeded', null, { timeout: 60000 });
    await page.waitForFunction(() => document.querySelectorAll('table.positions tbody tr').length === 960, null,
                               { timeout: 15000 });
    const table = results(perftJob);
    const bySp = new Map(table.map((r) => [r.sp, r.nodes]));
    // The rows' counts against c960 results.
    const shown = await page.$$eval('table.positions tbody tr', (trs) =>
      trs.map((tr) => [tr.cells[1].textContent, tr.cells[4].textContent.replace(/,/g, '')]));
    for (const [sp, nodes] of shown) assert.equal(nodes, bySp.get(sp), `position ${sp}`);
    // The divide shown (position 518 first) sums to its count and matches c960 results --divide.
    const divide = results(perftJob, '--divide').filter((r) => r.sp === '518');
    const moves = await page.$$eval('table.divide tbody tr', (trs) =>
      trs.map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent.replace(/,/g, '')]));
    assert.equal(moves.length, divide.length);
    assert.deepEqual(new Map(moves), new Map(divide.map((r) => [r.move, r.nodes])));
    assert.equal(moves.reduce((s, [, n]) => s + BigInt(n), 0n), BigInt(bySp.get('518')));
    assert.equal(await page.locator('#heatmap .hm-cell').count(), 960);
    const tip = await heatmapTooltip(page, 0, '#heatmap');
    assert.ok(tip.includes(`${Number(bySp.get('0')).toLocaleString('en')} nodes`), `tooltip "${tip}"`);
    await shoot(page, 'dashboard-perft');
    noProblems(problems);
  });
});

// The download links give the bytes `c960 results` writes: CSV and JSON (with --divide too) of the
// perft job, and the ranked self-play job's CSV, JSON and PGN.
test('downloads: the files c960 results writes, byte for byte', async () => {
  await withPage(`${base}/jobs/${perftJob}`, { name: 'downloads', artifactsDir, login: token.admin },
                 async (page, problems) => {
    await page.waitForFunction(() => document.body.dataset.state === 'succeeded', null, { timeout: 60000 });
    const links = await page.$$eval('#downloads a', (as) => as.map((a) => [a.textContent, a.getAttribute('href')]));
    assert.deepEqual(links.map(([t]) => t), ['CSV', 'JSON', 'CSV with divide', 'JSON with divide']);
    const want = [[perftJob, '--format', 'csv'], [perftJob, '--format', 'json'],
                  [perftJob, '--format', 'csv', '--divide'], [perftJob, '--format', 'json', '--divide']];
    for (const [i, [, href]] of links.entries()) {
      const got = await page.request.get(`${base}${href}`);
      assert.equal(got.status(), 200, href);
      assert.ok(Buffer.from(await got.body()).equals(cliOutput(...want[i])), `${href} differs from c960 results ${want[i].join(' ')}`);
    }
    await page.goto(`${base}/jobs/${rankedJob}`, { waitUntil: 'load' });
    await page.waitForFunction(() => document.body.dataset.state === 'succeeded', null, { timeout: 120000 });
    const sp = await page.$$eval('#downloads a', (as) => as.map((a) => a.getAttribute('href')));
    assert.equal(sp.length, 3);
    const pgnFile = path.join(fs.mkdtempSync(path.join(process.env.TMPDIR || '/tmp', 'c960-pgn-')), 'games.pgn');
    const csv = cliOutput(rankedJob, '--format', 'csv', '--pgn', pgnFile);
    for (const [href, bytes] of [[sp[0], csv], [sp[1], cliOutput(rankedJob, '--format', 'json')], [sp[2], fs.readFileSync(pgnFile)]]) {
      const got = await page.request.get(`${base}${href}`);
      assert.equal(got.status(), 200, href);
      assert.ok(Buffer.from(await got.body()).equals(bytes), `${href} differs from c960 results`);
    }
    // 5 positions, 20 games each, every game stored (the default).
    assert.equal((fs.readFileSync(pgnFile, 'utf8').match(/\[Variant "Chess960"\]/g) || []).length, 100);
    fs.rmSync(path.dirname(pgnFile), { recursive: true, force: true });
    noProblems(problems);
  });
});

// A submit token logs in and sees its own job only (no workers, no others' jobs), with the notice
// that says why it does not move, and cancels it from the job page.
test('a submitter sees and cancels its own job; the notice says why it waits', async () => {
  await withPage(`${base}/`, { name: 'submitter', artifactsDir, login: token.submitter }, async (page, problems) => {
    await page.waitForFunction(() => Number(document.body.dataset.rendered || 0) >= 1, null, { timeout: 15000 });
    // Issue 34: the browser holds a session, not the token: a __Host- cookie, Secure, HttpOnly
    // (no script reads it), SameSite=Strict, whose value is not the token.
    const cookies = await page.context().cookies(base);
    assert.deepEqual(cookies.map((c) => c.name), ['__Host-c960_session']);
    const [session] = cookies;
    assert.equal(session.secure, true);
    assert.equal(session.httpOnly, true);
    assert.equal(session.sameSite, 'Strict');
    assert.equal(session.path, '/');
    assert.notEqual(session.value, token.submitter);
    assert.ok(!session.value.includes(token.submitter) && !token.submitter.includes(session.value));
    assert.match(session.value, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(await page.evaluate(() => document.cookie), '');
    const ids = await page.$$eval('table.jobs tr[data-job]', (trs) => trs.map((tr) => tr.dataset.job));
    assert.deepEqual(ids, [waitingJob]);
    assert.equal(await page.locator('table.workers').count(), 0);
    assert.equal(await page.locator('a[href="/metrics"]').count(), 0);
    assert.match(await page.locator('header .who').textContent(), /^submitter \(submit\)$/);
    assert.match(await page.locator(`tr[data-notice-for="${waitingJob}"]`).textContent(), /checked by a second owner/);
    await shoot(page, 'dashboard-submitter');
    // Others' pages are not found for it.
    const other = await page.request.get(`${base}/jobs/${perftJob}`);
    assert.equal(other.status(), 404);
    await page.goto(`${base}/jobs/${waitingJob}`, { waitUntil: 'load' });
    await page.waitForFunction(() => Number(document.body.dataset.rendered || 0) >= 1, null, { timeout: 15000 });
    assert.equal(await page.evaluate(() => document.body.dataset.state), 'running');
    assert.match(await page.locator('p.spec').textContent(), /perft depth 2, positions 0-3, .* · verify adaptive · submitted by submitter/);
    const notice = page.locator('.notes p.notice');
    assert.equal(await notice.isVisible(), true);
    assert.match(await notice.textContent(), /checked by a second owner/);
    assert.equal(await page.locator('#units-done').textContent(), '0 of 4 done');
    await shoot(page, 'job-waiting');
    // A cancel that is not the page's own request (no X-Requested-With) is refused.
    const forged = await page.evaluate(async (job) => {
      const r = await fetch(`/api/v1/jobs/${job}/cancel`, { method: 'POST', credentials: 'same-origin' });
      return [r.status, await r.text()];
    }, waitingJob);
    assert.equal(forged[0], 403);
    assert.match(forged[1], /X-Requested-With: missing/);
    // Chromium logs the refused fetch as a console error: that one was expected.
    problems.console = problems.console.filter((m) => !/status of 403/.test(m));
    // Nor from another origin, even with the header (Node's request: no browser sends this).
    const cross = await page.request.post(`${base}/api/v1/jobs/${waitingJob}/cancel`,
                                          { headers: { 'X-Requested-With': 'c960-dashboard', Origin: 'https://evil.example' } });
    assert.equal(cross.status(), 403);
    assert.match(await cross.text(), /Origin: 'https:\/\/evil.example' is not this site/);
    assert.match(jobState(waitingJob), /RUNNING|running/);
    // The button: one click arms it, a second cancels.
    const button = page.locator('button.cancel');
    await button.click();
    assert.equal(await button.textContent(), 'click again to cancel');
    await button.click();
    await page.waitForFunction(() => document.body.dataset.state === 'cancelled', null, { timeout: 15000 });
    assert.equal(await page.locator('button.cancel').count(), 0);
    assert.match(jobState(waitingJob), /cancelled|CANCELLED/);
    // Log out (a form post from this page): back at the login form, and the cookie no longer serves.
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('header form[action="/logout"] button')]);
    assert.equal(new URL(page.url()).pathname, '/login');
    const after = await page.goto(`${base}/`, { waitUntil: 'load' });
    assert.equal(after.status(), 401);
    assert.equal(await page.locator('#token').isVisible(), true);
    // The logout ended the session in the coordinator: the old cookie, put back by hand (as
    // anything else that saw it could send it), is refused, and so is the token as a cookie.
    for (const value of [session.value, token.submitter]) {
      const cookie = { name: session.name, value, url: base, secure: true, httpOnly: true, sameSite: 'Strict' };
      await page.context().addCookies([cookie]);
      const replayed = await page.reload({ waitUntil: 'load' });
      assert.equal(replayed.status(), 401, value === session.value ? 'the ended session' : 'the token as a cookie');
      assert.equal(await page.locator('#token').isVisible(), true);
      await page.context().addCookies([cookie]);
      assert.equal((await page.request.get(`${base}/api/v1/jobs`)).status(), 401);
    }
    // The old token cookie is no credential either.
    await page.context().addCookies([{ name: 'c960_token', value: token.submitter, url: base }]);
    assert.equal((await page.reload({ waitUntil: 'load' })).status(), 401);
    problems.console = problems.console.filter((m) => !/status of 401/.test(m));
    noProblems(problems);
  });
});

test('a worker token cannot log in; the form says which roles may', async () => {
  await withPage(`${base}/login`, { name: 'login-worker', artifactsDir }, async (page) => {
    await page.fill('#token', token.worker);
    const [answer] = await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('button[type=submit]')]);
    assert.equal(answer.status(), 403);
    assert.match(await page.locator('.error').textContent(), /has role worker: the dashboard needs role submit, read or admin/);
  });
});
