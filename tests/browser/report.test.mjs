// The HTML report in headless Chromium: no console errors or outside requests, 960 heatmap cells,
// tooltips with the right numbers (computed here from the input CSV, not taken from the report),
// charts drawn. Run by tests/browser/run.sh, which makes the reports and sets:
//   C960_SELFPLAY_REPORT, C960_SELFPLAY_CSV  a self-play report (made with a reference) and its table
//   C960_PERFT_REPORT, C960_PERFT_CSV        a perft report of several depths and its table
//   C960_ADAPTIVE_REPORT, C960_ADAPTIVE_CSV  the report of an adaptive run (--band) and its table
//   C960_MATCH_REPORT, C960_MATCH_CSV        a two-engine match's report and its table
//   C960_MATCH_JSON_REPORT, C960_MATCH_JSON  a match with an SPRT, from its JSON
//   C960_SCREENSHOT, C960_SCREENSHOT_ADAPTIVE, C960_SCREENSHOT_MATCH  where to save screenshots
//                                            (optional; docs/report-*.png)
//   C960_ARTIFACTS                           where screenshots of failures go
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { withPage, noProblems, heatmapTooltip, chartDrawn } from './harness.mjs';

const artifactsDir = process.env.C960_ARTIFACTS || 'browser-artifacts';

function readCsv(file) {
  const [header, ...lines] = fs.readFileSync(file, 'utf8').trim().split('\n');
  const names = header.split(',');
  return lines.filter((l) => l !== header).map((l) => Object.fromEntries(l.split(',').map((v, i) => [names[i], v])));
}

// The back rank, read from the FEN's last rank (independent of the report's numbering code).
const backrankOfFen = (fen) => fen.split(' ')[0].split('/')[7];

// The report's interval (selfplay/stats.h), recomputed another way: the score interval's ends by
// bisection on n (s - p)^2 - z^2 V(p), and the Agresti-Coull-type interval; their hull.
function interval(w, d, l) {
  const z = 1.959963984540054, n = w + d + l, s = (w + d / 2) / n, dr = d / n;
  const V = (p) => p * (1 - p) - Math.min(dr, 2 * p, 2 - 2 * p) / 4;
  const f = (p) => n * (s - p) ** 2 - z * z * V(p);
  const cross = (a, b) => {  // f(a) > 0 >= f(b) or the reverse
    const fa = f(a) > 0;
    for (let i = 0; i < 200; i++) { const m = (a + b) / 2; if ((f(m) > 0) === fa) a = m; else b = m; }
    return (a + b) / 2;
  };
  let lo = f(0) <= 0 ? 0 : cross(0, s), hi = f(1) <= 0 ? 1 : cross(s, 1);
  const a = z * z / 2, na = n + z * z, sa = (w + a + d / 2) / na;
  const va = Math.max(0, (w + a + d / 4) / na - sa * sa), half = z * Math.sqrt(va / na);
  lo = Math.max(0, Math.min(lo, sa - half));
  hi = Math.min(1, Math.max(hi, sa + half));
  return [lo, hi];
}

function numbersIn(text) { return (text.match(/\d+(\.\d+)?/g) || []).map(Number); }

test('self-play report: heatmap, tooltips, charts, no errors', async () => {
  const rows = readCsv(process.env.C960_SELFPLAY_CSV).filter((r) => r.sp !== 'all');
  // Three cells: the classical position, the best-scoring row of the table, and a fixed other one.
  const score = (r) => (Number(r.white_wins) + Number(r.draws) / 2) / Number(r.games);
  const best = rows.reduce((a, b) => (score(b) > score(a) ? b : a));
  const chosen = [rows.find((r) => r.sp === '518'), best, rows[Math.floor(rows.length / 3)]].filter(Boolean);
  assert.ok(chosen.length >= 2, 'the table should have position 518 or several rows');

  await withPage(process.env.C960_SELFPLAY_REPORT, { name: 'selfplay-report', artifactsDir }, async (page, problems) => {
    await page.waitForSelector('body[data-rendered]');
    // The colour scale's ends, as shown: White's score, so inside [0, 1].
    const ends = await page.$$eval('#heatmap .hm-legend-value', (els) => els.map((e) => e.textContent));
    assert.equal(ends.length, 2, `legend ends: ${ends}`);
    for (const e of ends) assert.ok(Number(e) >= 0 && Number(e) <= 1, `legend end ${e} is not a score`);
    for (const r of chosen) {
      const tip = await heatmapTooltip(page, r.sp);
      const [w, d, l] = [Number(r.white_wins), Number(r.draws), Number(r.black_wins)];
      const lines = tip.split('\n').map((s) => s.trim()).filter(Boolean);
      assert.equal(lines[0], `${r.sp} ${backrankOfFen(r.fen)}`, `tooltip head of ${r.sp}`);
      assert.deepEqual(numbersIn(lines[1]), [w + d + l, w, d, l], `games of ${r.sp}: ${lines[1]}`);
      const [s, lo, hi] = numbersIn(lines[2]).filter((x) => x !== 95);
      assert.equal(s.toFixed(3), ((w + d / 2) / (w + d + l)).toFixed(3), `score of ${r.sp}: ${lines[2]}`);
      const [elo, ehi] = interval(w, d, l);
      assert.ok(Math.abs(lo - elo) < 0.0015 && Math.abs(hi - ehi) < 0.0015,
                `interval of ${r.sp}: ${lines[2]}, expected ${elo.toFixed(4)}-${ehi.toFixed(4)}`);
    }
    // Cells are coloured by score: as many colours as scores, give or take the clamped extremes.
    const colours = await page.$$eval('.hm-cell', (cells) => new Set(cells.map((c) => c.style.backgroundColor)).size);
    const scores = new Set(rows.map((r) => score(r).toFixed(6))).size;
    assert.ok(colours >= Math.min(5, scores) && colours <= scores + 1, `${colours} cell colours for ${scores} scores`);
    for (const id of ['histogram', 'scatter']) assert.equal(await chartDrawn(page, id), '');
    const tableRows = await page.locator('#positions tbody tr').count();
    assert.equal(tableRows, rows.length);
    noProblems(problems);
    if (process.env.C960_SCREENSHOT) await page.screenshot({ path: process.env.C960_SCREENSHOT, fullPage: false });
  });
});

test('perft report: heatmap of counts, charts, no errors', async () => {
  const rows = readCsv(process.env.C960_PERFT_CSV);
  const deepest = Math.max(...rows.map((r) => Number(r.depth)));
  const target = rows.find((r) => r.sp === '518' && Number(r.depth) === deepest) ||
                 rows.find((r) => Number(r.depth) === deepest);
  await withPage(process.env.C960_PERFT_REPORT, { name: 'perft-report', artifactsDir }, async (page, problems) => {
    await page.waitForSelector('body[data-rendered]');
    const tip = await heatmapTooltip(page, target.sp);
    assert.match(tip, new RegExp(`^${target.sp} ${backrankOfFen(target.fen)}`));
    assert.ok(tip.includes(`depth ${deepest}: ${target.nodes} nodes`), tip);
    for (const id of ['counts-chart', 'growth-chart']) assert.equal(await chartDrawn(page, id), '');
    noProblems(problems);
  });
});

// Numbers as the page writes them: real minus signs, narrow no-break spaces between digit groups.
const pageNumber = (text) => Number(text.replace(/\u2212/g, '-').replace(/[\u202f\s]/g, ''));

test('adaptive run: verdicts, games played, anytime intervals, sorting', async () => {
  const rows = readCsv(process.env.C960_ADAPTIVE_CSV).filter((r) => r.sp !== 'all');
  const verdicts = {};
  for (const r of rows) verdicts[r.verdict] = (verdicts[r.verdict] || 0) + 1;
  const played = rows.map((r) => Number(r.games) + Number(r.duplicates) + Number(r.uncounted));
  const order = ['above', 'below', 'inside', 'narrow', 'cap', 'open'];
  await withPage(process.env.C960_ADAPTIVE_REPORT, { name: 'adaptive-report', artifactsDir }, async (page, problems) => {
    await page.waitForSelector('body[data-rendered]');
    for (const [v, n] of Object.entries(verdicts)) {
      const shown = await page.locator(`#verdicts tr[data-verdict="${v}"] td:nth-child(2)`).innerText();
      assert.equal(Number(shown), n, `positions with verdict ${v}`);
    }
    const total = await page.locator('#spent tr:first-child td').innerText();
    assert.equal(pageNumber(total), played.reduce((a, b) => a + b, 0), `games played: ${total}`);
    // One row a position, decided ones first, each with the CSV's anytime interval.
    const table = page.locator('#anytime tbody tr');
    assert.equal(await table.count(), rows.length);
    const shownRows = await table.evaluateAll((trs) => trs.map((tr) => Array.from(tr.cells, (c) => c.innerText)));
    const ranks = shownRows.map((cells) => order.indexOf(cells[9]));
    for (let i = 1; i < ranks.length; i++) assert.ok(ranks[i - 1] <= ranks[i], `row ${i} out of verdict order`);
    for (const r of rows) {
      const cells = shownRows.find((c) => c[0] === r.sp);
      assert.ok(cells, `position ${r.sp} in the table`);
      assert.equal(cells[6], `${Number(r.anytime_lo).toFixed(3)}\u2013${Number(r.anytime_hi).toFixed(3)}`, `anytime ${r.sp}`);
      assert.equal(cells[9], r.verdict);
    }
    if (process.env.C960_SCREENSHOT_ADAPTIVE)
      await page.locator('#adaptive').screenshot({ path: process.env.C960_SCREENSHOT_ADAPTIVE });
    // A click on "played" sorts by it.
    await page.locator('#anytime thead th', { hasText: 'played' }).click();
    const sorted = await page.locator('#anytime tbody tr td:nth-child(3)').allInnerTexts();
    const values = sorted.map(pageNumber);
    assert.deepEqual(values, [...played].sort((a, b) => a - b), 'sorted by games played');
    noProblems(problems);
  });
});

test('match report: totals, favouring positions, heatmap of A\'s score', async () => {
  const all = readCsv(process.env.C960_MATCH_CSV);
  const rows = all.filter((r) => r.sp !== 'all');
  const cells = ['ll', 'ld', 'dd_wl', 'wd', 'ww'], points = [0, 0.25, 0.5, 0.75, 1];
  const pairsOf = (r) => cells.reduce((n, c) => n + Number(r[c]), 0);
  const scoreOf = (r) => cells.reduce((s, c, i) => s + Number(r[c]) * points[i], 0) / pairsOf(r);
  const sum = Object.fromEntries(cells.map((c) => [c, rows.reduce((n, r) => n + Number(r[c]), 0)]));
  const score = scoreOf(sum), elo = -400 * Math.log10(1 / score - 1);
  await withPage(process.env.C960_MATCH_REPORT, { name: 'match-report', artifactsDir }, async (page, problems) => {
    await page.waitForSelector('body[data-rendered]');
    assert.equal(pageNumber(await page.locator('#pairs').innerText()), pairsOf(sum));
    const shownScore = Number(await page.locator('#match-score').innerText());
    assert.ok(Math.abs(shownScore - score) <= 0.0005 + 1e-9, `score ${shownScore}, expected ${score}`);
    const eloText = await page.locator('#match-elo').innerText();
    assert.ok(!eloText.includes('-'), `Elo with a hyphen for a minus: ${eloText}`);
    assert.ok(Math.abs(pageNumber(eloText) - elo) <= 0.051, `Elo ${eloText}, expected ${elo.toFixed(1)}`);
    const penta = await page.locator('#penta tbody tr td:nth-child(3)').allInnerTexts();
    assert.deepEqual(penta.map(pageNumber), cells.map((c) => sum[c]));
    // Positions listed as favouring: those below 5% after Benjamini-Hochberg, by the CSV.
    const listed = rows.filter((r) => Number(r.p_bh) < 0.05).length;
    assert.equal(await page.locator('#favouring tbody tr').count(), listed);
    // A start position's tooltip: its pairs and A's score.
    const r = rows.find((x) => pairsOf(x) > 0);
    const tip = await heatmapTooltip(page, r.sp);
    const lines = tip.split('\n').map((l) => l.trim()).filter(Boolean);
    assert.equal(lines[0], `${r.sp} ${backrankOfFen(r.fen)}`);
    assert.equal(numbersIn(lines[1])[0], pairsOf(r), lines[1]);
    assert.equal(numbersIn(lines[2])[0].toFixed(3), scoreOf(r).toFixed(3), lines[2]);
    assert.equal(await page.locator('#positions tbody tr').count(), rows.filter((x) => pairsOf(x) > 0).length);
    noProblems(problems);
    if (process.env.C960_SCREENSHOT_MATCH) {
      // Down to the heatmap, with the tooltip of the classical position.
      await page.setViewportSize({ width: 1400, height: 1500 });
      await heatmapTooltip(page, 518);
      await page.screenshot({ path: process.env.C960_SCREENSHOT_MATCH, fullPage: false });
    }
  });
});

test('match report from JSON: engines named, SPRT decided', async () => {
  const run = JSON.parse(fs.readFileSync(process.env.C960_MATCH_JSON, 'utf8'));
  await withPage(process.env.C960_MATCH_JSON_REPORT, { name: 'match-json-report', artifactsDir }, async (page, problems) => {
    await page.waitForSelector('body[data-rendered]');
    assert.equal(await page.title(), `c960 match report: ${run.engines.a} vs ${run.engines.b}`);
    const sprt = await page.locator('#sprt-result').innerText();
    const expected = { H1: 'H1 accepted', H0: 'H0 accepted', continue: 'Not decided' }[run.sprt.result];
    assert.ok(sprt.startsWith(expected), sprt);
    const llr = pageNumber(sprt.match(/ratio ([\u2212+]?[\d.]+)/)[1]);
    assert.ok(Math.abs(llr - run.sprt.llr) < 0.0015, `LLR ${llr}, the run's ${run.sprt.llr}`);
    // A's score at the page's precision (half-way cases round either way: compare the values).
    const score = Number(await page.locator('#match-score').innerText());
    assert.ok(Math.abs(score - run.total.score) <= 0.0005 + 1e-9, `score ${score}, the run's ${run.total.score}`);
    noProblems(problems);
  });
});
