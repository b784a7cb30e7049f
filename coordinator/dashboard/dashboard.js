// The coordinator's dashboard (served at / and /jobs/ID with heatmap.js, no other script): builds
// the page from the read-only JSON API and polls it, so the page follows the cluster live.
//   /          jobs with progress bars, rates and ETAs; workers with rates, last seen and trust
//   /jobs/ID   one job: progress, and for self-play the 960-cell heatmap of White's score with a
//              tooltip per cell, for perft the counts per position and the first-move divide
// Everything shown that came from the coordinator is set as text (textContent), never as HTML:
// job notices and failure reasons come from workers. Times are ISO 8601 in UTC, as the c960 tool
// writes them. The page's body says who looks (data-role, data-caller) and whether the workers
// are theirs to see (data-workers): a submit token sees its own jobs, and cancels them.
(function () {
  'use strict';

  const JOBS_POLL_MS = 2000;  // the dashboard
  const JOB_POLL_MS = 1000;   // one job (results only when units were done since)
  const main = document.getElementById('main');
  const page = document.body.dataset.page;
  const role = document.body.dataset.role;
  const caller = document.body.dataset.caller;
  const seesWorkers = document.body.dataset.workers === '1';

  // ------------------------------------------------------------------------------------------
  // Helpers

  function el(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  async function getJson(url) {
    const r = await fetch(url, { credentials: 'same-origin', cache: 'no-store' });
    if (r.status === 401) {
      // The login expired or the token was revoked: log in again and come back here.
      location.assign('/login?next=' + encodeURIComponent(location.pathname));
      throw new Error('not logged in');
    }
    const body = await r.json().catch(() => null);
    if (!r.ok) throw new Error((body && body.error && body.error.message) || `${url}: HTTP ${r.status}`);
    return body;
  }

  // A state-changing request: the header tells the coordinator it comes from this page (CSRF).
  async function postJson(url) {
    const r = await fetch(url, { method: 'POST', credentials: 'same-origin', cache: 'no-store',
                                 headers: { 'X-Requested-With': 'c960-dashboard' } });
    const body = await r.json().catch(() => null);
    if (!r.ok) throw new Error((body && body.error && body.error.message) || `${url}: HTTP ${r.status}`);
    return body;
  }

  // "2026-11-30T16:38:29Z" (UTC), as `c960 results` writes times; '—' for none.
  function isoTime(ms) {
    if (!num(ms)) return '—';
    return new Date(num(ms)).toISOString().replace(/\.\d{3}Z$/, 'Z');
  }

  // Protobuf's JSON writes 64-bit integers as strings and UInt128 as {hi, lo}.
  const num = (x) => (x === undefined || x === null ? 0 : Number(x));
  const big = (u) => (u ? (BigInt(u.hi || 0) << 64n) + BigInt(u.lo || 0) : 0n);
  const intText = (x) => (typeof x === 'bigint' ? x : BigInt(Math.round(num(x)))).toLocaleString('en');

  function duration(s) {
    if (s === undefined || s === null || s < 0 || !isFinite(s)) return '—';
    s = Math.round(s);
    if (s < 60) return `${s}s`;
    if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
    if (s < 86400) return `${Math.floor(s / 3600)}h ${String(Math.floor(s / 60) % 60).padStart(2, '0')}m`;
    return `${Math.floor(s / 86400)}d ${Math.floor(s / 3600) % 24}h`;
  }

  function ago(ms) {
    if (!num(ms)) return '—';
    const s = (Date.now() - num(ms)) / 1000;
    return s < 1 ? 'now' : `${duration(s)} ago`;
  }

  function rate(x, unit) {
    if (!x || !isFinite(x)) return '—';
    const units = [[1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
    for (const [f, p] of units) if (x >= f) return `${(x / f).toFixed(x >= 100 * f ? 0 : 1)} ${p}${unit}`;
    return `${x.toFixed(x >= 10 ? 0 : 1)} ${unit}`;
  }

  const STATE = { JOB_STATE_RUNNING: 'running', JOB_STATE_SUCCEEDED: 'succeeded', JOB_STATE_FAILED: 'failed',
                  JOB_STATE_CANCELLED: 'cancelled' };
  const TRUST = { TRUST_STATE_NEW: 'new', TRUST_STATE_TRUSTED: 'trusted', TRUST_STATE_QUARANTINED: 'quarantined' };
  const stateName = (s) => STATE[s] || 'unknown';
  const kindOf = (job) => (job.spec && job.spec.selfplay ? 'selfplay' : job.spec && job.spec.evaluation ? 'evaluation' : 'perft');
  // The coordinator's default (VERIFY_MODE_UNSPECIFIED) is adaptive.
  const verifyName = (v) => (v && v !== 'VERIFY_MODE_UNSPECIFIED' ? v.slice(12).toLowerCase() : 'adaptive');
  // The kind, with a perft job's depth: "perft depth 5".
  const kindText = (job) => (kindOf(job) === 'perft' ? `perft depth ${num((job.spec.perft || {}).depth)}` : kindOf(job));
  // Admin cancels any job, a submitter its own (the coordinator decides; this only hides the button).
  const mayCancel = (job) => job.state === 'JOB_STATE_RUNNING' &&
    (role === 'admin' || (role === 'submit' && job.owner === caller));

  function badge(text, kind) { return el('span', `badge badge-${kind || text}`, text); }

  function progressBar(done, total) {
    const frac = total > 0 ? Math.min(1, done / total) : 0;
    const wrap = el('div', 'bar');
    wrap.setAttribute('role', 'progressbar');
    wrap.setAttribute('aria-valuemin', '0');
    wrap.setAttribute('aria-valuemax', String(total));
    wrap.setAttribute('aria-valuenow', String(done));
    const fill = el('div', 'bar-fill');
    const pct = `${(100 * frac).toFixed(1)}%`;
    fill.style.width = pct;
    // The percentage twice: dark over the empty part, light over the fill (clipped to it), so it
    // reads wherever the fill ends.
    const onFill = el('span', 'bar-text bar-text-fill', pct);
    onFill.setAttribute('aria-hidden', 'true');
    onFill.style.clipPath = `inset(0 ${(100 - 100 * frac).toFixed(1)}% 0 0)`;
    wrap.append(fill, el('span', 'bar-text', pct), onFill);
    return wrap;
  }

  // A running job's ETA, as `c960 watch` gives it: no time while the job waits (every unit left
  // waits for a second worker's result, or the coordinator's notice says it waits), since a rate
  // measured before would make one up.
  function etaText(job, p) {
    if (job.state !== 'JOB_STATE_RUNNING') return '—';
    const verifying = num(p.units_verifying);
    if (verifying > 0 && num(p.units_total) - num(p.units_done) <= verifying) return 'waiting on verification';
    if ((job.notice || '').startsWith('waiting:')) return 'none while waiting';
    return duration(num(p.eta_seconds));
  }

  // The numbers of a job's progress, whatever its kind.
  function progressOf(job) {
    const p = job.progress || {};
    const selfplay = kindOf(job) === 'selfplay';
    return {
      selfplay,
      unitsDone: num(p.units_done), unitsTotal: num(p.units_total), leased: num(p.units_leased),
      verifying: num(p.units_verifying), disagreements: num(p.disagreements),
      gamesDone: num(p.games_done), gamesTotal: num(p.games_total), nodes: big(p.nodes_done),
      rate: selfplay ? rate(num(p.games_per_second) * 60, 'games/min') : rate(num(p.nodes_per_second), 'nodes/s'),
      eta: etaText(job, p),
      workers: num(p.workers), alive: num(p.workers_alive),
    };
  }

  function specSummary(job) {
    const s = job.spec || {};
    if (s.selfplay) {
      const sp = s.selfplay;
      const limit = num(sp.nodes) ? `${intText(sp.nodes)} nodes` : num(sp.depth) ? `depth ${sp.depth}` : `${sp.movetime_ms} ms`;
      return `${sp.engine || 'builtin'}, ${limit}/move, ${sp.games_per_position} games per position, ` +
             `positions ${sp.start_positions || 'all'}, ${num(sp.random_plies)} random plies, seed ${sp.seed}`;
    }
    if (s.evaluation) {
      const e = s.evaluation;
      const limit = num(e.depth) ? `depth ${e.depth}` : `${intText(e.nodes)} nodes`;
      return `evaluation by ${(e.engines || []).map((x) => x.engine).join(', ')} at ${limit}, ` +
             `positions ${e.start_positions || 'all'}`;
    }
    const p = s.perft || {};
    const roots = (p.fens || []).length ? `${p.fens.length} FENs` : `positions ${p.start_positions || 'all'}`;
    return `perft depth ${p.depth}, ${roots}, split ply ${job.split_depth}`;
  }

  function table(headers, className) {
    const t = el('table', className);
    const tr = el('tr');
    for (const h of headers) tr.appendChild(el('th', null, h));
    t.appendChild(el('thead')).appendChild(tr);
    t.appendChild(el('tbody'));
    return t;
  }

  function section(title, id) {
    const s = el('section', 'panel');
    if (id) s.id = id;
    s.appendChild(el('h2', null, title));
    main.appendChild(s);
    return s;
  }

  function showError(err) {
    let box = document.getElementById('error');
    if (!box) {
      box = el('p', 'error');
      box.id = 'error';
      box.setAttribute('role', 'alert');
      main.prepend(box);
    }
    box.textContent = `cannot update: ${err.message}`;
  }
  function clearError() {
    const box = document.getElementById('error');
    if (box) box.remove();
  }

  function stamp() {
    const u = document.getElementById('updated');
    if (u) u.textContent = `updated ${isoTime(Date.now())}`;
  }

  // ------------------------------------------------------------------------------------------
  // The dashboard: jobs and workers

  function dashboard() {
    main.textContent = '';
    const head = el('div', 'summary');
    head.id = 'summary';
    const updated = el('span', 'updated');
    updated.id = 'updated';
    main.append(head, updated);
    const jobs = section('Jobs', 'jobs');
    const jobsTable = table(['job', 'kind', 'state', 'progress', 'done', 'rate', 'ETA', 'workers', 'submitted', 'owner'],
                            'jobs');
    jobs.appendChild(jobsTable);
    // The workers only for who may list them (read, admin): a submitter sees its own jobs.
    const workersTable = table(['worker', 'host', 'owner', 'threads', 'engines', 'version', 'units done', 'rate',
                                'last seen', 'trust', 'alive'], 'workers');
    if (seesWorkers) section('Workers', 'workers').appendChild(workersTable);

    async function refresh() {
      try {
        const [jl, wl] = await Promise.all([getJson('/api/v1/jobs?page_size=50'),
                                            seesWorkers ? getJson('/api/v1/workers?include_lost=1&page_size=1000')
                                                        : Promise.resolve(null)]);
        renderJobs(jobsTable.tBodies[0], jl.jobs || []);
        const running = (jl.jobs || []).filter((j) => j.state === 'JOB_STATE_RUNNING').length;
        let text = `${running} running job${running === 1 ? '' : 's'}` + (role === 'submit' ? ` of ${caller}` : '');
        if (wl) {
          renderWorkers(workersTable.tBodies[0], wl.workers || []);
          const alive = (wl.workers || []).filter((w) => w.alive);
          const threads = alive.reduce((n, w) => n + num(w.threads), 0);
          text += ` · ${alive.length} worker${alive.length === 1 ? '' : 's'} alive (${threads} thread${threads === 1 ? '' : 's'})`;
        }
        head.textContent = text;
        clearError();
        stamp();
        document.body.dataset.rendered = String(Number(document.body.dataset.rendered || 0) + 1);
      } catch (err) {
        showError(err);
      }
      setTimeout(refresh, JOBS_POLL_MS);
    }
    refresh();
  }

  function renderJobs(tbody, jobs) {
    tbody.textContent = '';
    if (!jobs.length) {
      const tr = tbody.appendChild(el('tr'));
      const td = tr.appendChild(el('td', 'empty', 'no jobs yet: c960 submit perft|selfplay ...'));
      td.colSpan = 11;
      return;
    }
    for (const job of jobs) {
      const p = progressOf(job);
      const tr = el('tr');
      tr.dataset.job = job.id;
      tr.dataset.unitsDone = String(p.unitsDone);
      const link = el('a', null, job.id);
      link.href = `/jobs/${encodeURIComponent(job.id)}`;
      tr.appendChild(el('td')).appendChild(link);
      tr.appendChild(el('td', null, kindText(job)));
      tr.appendChild(el('td')).appendChild(badge(stateName(job.state)));
      tr.appendChild(el('td', 'cell-bar')).appendChild(progressBar(p.unitsDone, p.unitsTotal));
      tr.appendChild(el('td', 'num', p.selfplay ? `${intText(p.gamesDone)}/${intText(p.gamesTotal)} games`
                                                : `${intText(p.unitsDone)}/${intText(p.unitsTotal)} units`));
      tr.appendChild(el('td', 'num', p.rate));
      tr.appendChild(el('td', 'num', p.eta));
      tr.appendChild(el('td', 'num', `${p.workers}/${p.alive}`));
      const created = tr.appendChild(el('td', 'num', isoTime(job.created_unix_ms)));
      created.title = ago(job.created_unix_ms);
      tr.appendChild(el('td', null, job.owner || '—'));
      tbody.appendChild(tr);
      // Why a running job does not move (no worker, one worker under verification, ...): shown
      // under its row, not hidden in a tooltip.
      if (job.notice) {
        const nr = el('tr', 'notice-row');
        nr.dataset.noticeFor = job.id;
        const td = nr.appendChild(el('td', 'notice', job.notice));
        td.colSpan = 11;
        tbody.appendChild(nr);
      }
    }
  }

  function renderWorkers(tbody, workers) {
    tbody.textContent = '';
    if (!workers.length) {
      const td = tbody.appendChild(el('tr')).appendChild(el('td', 'empty', 'no workers yet: c960-worker --coordinator ...'));
      td.colSpan = 11;
      return;
    }
    workers.sort((a, b) => Number(b.alive) - Number(a.alive) || a.name.localeCompare(b.name));
    for (const w of workers) {
      const tr = el('tr', w.alive ? '' : 'lost');
      tr.dataset.worker = w.name;
      tr.appendChild(el('td', 'mono', w.name));
      tr.appendChild(el('td', null, w.host));
      // The owner: one voter whatever its credentials and names; a trust root decides disputes.
      tr.appendChild(el('td', null, w.trust_root ? `${w.owner || ''} (root)` : w.owner || ''));
      tr.appendChild(el('td', 'num', w.threads));
      tr.appendChild(el('td', null, (w.engines || []).join(', ')));
      tr.appendChild(el('td', null, w.version));
      tr.appendChild(el('td', 'num', intText(w.units_done)));
      tr.appendChild(el('td', 'num', rate(num(w.units_per_second) * 60, 'units/min')));
      tr.appendChild(el('td', null, ago(w.last_seen_unix_ms)));
      const trust = TRUST[w.trust] || 'unknown';
      const b = badge(trust);
      b.title = w.trust_reason || '';
      tr.appendChild(el('td')).appendChild(b);
      tr.appendChild(el('td', null, w.alive ? 'yes' : 'lost'));
      tbody.appendChild(tr);
    }
  }

  // ------------------------------------------------------------------------------------------
  // One job

  function jobPage(id) {
    main.textContent = '';
    const title = el('h1', 'job-title');
    const sub = el('p', 'spec');
    const updated = el('span', 'updated');
    updated.id = 'updated';
    const actions = el('div', 'actions');
    const downloads = el('p', 'downloads');
    downloads.id = 'downloads';
    main.append(title, sub, actions, downloads, updated);
    const prog = section('Progress', 'progress');
    const bar = el('div', 'job-bar');
    const stats = el('dl', 'stats');
    const notes = el('div', 'notes');
    prog.append(bar, stats, notes);
    let view = null;  // the kind's part, made on the first answer
    let resultsFor = -1;  // units_done when the results shown were fetched

    async function refresh() {
      let job;
      try {
        job = await getJson(`/api/v1/jobs/${encodeURIComponent(id)}`);
        const p = progressOf(job);
        document.title = `${job.id} ${stateName(job.state)} · c960`;
        title.textContent = '';
        title.append(el('span', null, `${job.id} `), badge(stateName(job.state)), el('span', 'kind', ` ${kindOf(job)}`));
        sub.textContent = `${specSummary(job)} · verify ${verifyName(job.spec.verify)}` +
                          (job.owner ? ` · submitted by ${job.owner}` : '');
        renderActions(actions, job, refresh);
        renderDownloads(downloads, job);
        bar.textContent = '';
        bar.appendChild(progressBar(p.unitsDone, p.unitsTotal));
        renderStats(stats, job, p);
        renderNotes(notes, job);
        document.body.dataset.unitsDone = String(p.unitsDone);
        document.body.dataset.state = stateName(job.state);
        // An evaluation job's results are its downloads (CSV, JSON); the page shows its progress.
        if (!view && kindOf(job) !== 'evaluation') view = p.selfplay ? selfplayView() : perftView();
        if (view && (p.unitsDone !== resultsFor || !view.shown)) {
          const results = await getJson(`/api/v1/jobs/${encodeURIComponent(id)}/results${p.selfplay ? '' : '?divide=1'}`);
          view.show(results);
          view.shown = true;
          resultsFor = p.unitsDone;
        }
        clearError();
        stamp();
        document.body.dataset.rendered = String(Number(document.body.dataset.rendered || 0) + 1);
      } catch (err) {
        showError(err);
      }
      // A finished job changes no more: one last look, then stop polling.
      if (!job || job.state === 'JOB_STATE_RUNNING' || resultsFor !== progressOf(job).unitsDone) setTimeout(refresh, JOB_POLL_MS);
    }
    refresh();
  }

  function renderStats(dl, job, p) {
    dl.textContent = '';
    const row = (k, v, id) => {
      const pair = dl.appendChild(el('div'));
      pair.appendChild(el('dt', null, k));
      const dd = pair.appendChild(el('dd', null, v));
      if (id) dd.id = id;
    };
    row('units', `${intText(p.unitsDone)} of ${intText(p.unitsTotal)} done`, 'units-done');
    row('leased / verifying', `${p.leased} / ${p.verifying}`);
    if (p.selfplay) row('games', `${intText(p.gamesDone)} of ${intText(p.gamesTotal)}`, 'games-done');
    else row('nodes', intText(p.nodes), 'nodes-done');
    row('rate', p.rate);
    row('ETA', p.eta);
    row('workers', `${p.workers} holding units, ${p.alive} alive`);
    row('submitted', isoTime(job.created_unix_ms), 'submitted');
    if (num(job.finished_unix_ms)) {
      row('finished', isoTime(job.finished_unix_ms), 'finished');
      row('took', duration((num(job.finished_unix_ms) - num(job.created_unix_ms)) / 1000));
    }
    row('disagreements / mismatches', `${p.disagreements} / ${num(job.result_mismatches)}`);
  }

  // Links to the results as files: the bytes `c960 results JOB --format csv|json [--divide]` and
  // `--pgn` write; while the job runs (or when it stopped short), what is done so far (partial=1).
  function renderDownloads(box, job) {
    const finished = job.state === 'JOB_STATE_SUCCEEDED';
    const key = `${job.id}:${finished}`;
    if (box.dataset.key === key) return;
    box.dataset.key = key;
    box.textContent = '';
    box.appendChild(el('span', 'label', finished ? 'results: ' : 'results so far: '));
    const base = `/api/v1/jobs/${encodeURIComponent(job.id)}/results`;
    const files = [['CSV', '.csv', ''], ['JSON', '.json', '']];
    if (kindOf(job) === 'perft') files.push(['CSV with divide', '.csv', 'divide=1'], ['JSON with divide', '.json', 'divide=1']);
    else if (kindOf(job) === 'selfplay') files.push(['PGN', '.pgn', '']);
    files.forEach(([label, ext, query], i) => {
      const params = [query, finished ? '' : 'partial=1'].filter(Boolean).join('&');
      const a = el('a', 'download', label);
      a.href = `${base}${ext}${params ? `?${params}` : ''}`;
      a.setAttribute('download', '');
      if (i) box.appendChild(document.createTextNode(' · '));
      box.appendChild(a);
    });
  }

  // The cancel button, for admin and the job's owner while it runs: one click arms it, a second
  // within a few seconds cancels (POST, as CancelJob).
  function renderActions(box, job, refresh) {
    if (!mayCancel(job)) {
      box.textContent = '';
      return;
    }
    if (box.querySelector('button.cancel')) return;
    const b = el('button', 'cancel', 'cancel job');
    b.type = 'button';
    let armed = null;
    b.addEventListener('click', async () => {
      if (!armed) {
        b.textContent = 'click again to cancel';
        b.classList.add('armed');
        armed = setTimeout(() => { armed = null; b.textContent = 'cancel job'; b.classList.remove('armed'); }, 5000);
        return;
      }
      clearTimeout(armed);
      b.disabled = true;
      try {
        await postJson(`/api/v1/jobs/${encodeURIComponent(job.id)}/cancel`);
        box.textContent = '';
        refresh();
      } catch (err) {
        b.disabled = false;
        showError(err);
      }
    });
    box.textContent = '';
    box.appendChild(b);
  }

  function renderNotes(box, job) {
    box.textContent = '';
    if (job.notice) box.appendChild(el('p', 'notice', job.notice));
    if (job.failure_detail) box.appendChild(el('p', 'failure', `failure: ${job.failure_detail}`));
    if (job.mismatch_detail) box.appendChild(el('p', 'failure', `mismatch: ${job.mismatch_detail}`));
  }

  // Self-play: the heatmap of White's score, the total, the leading and trailing positions.
  function selfplayView() {
    const s = section("White's score by start position", 'heatmap-section');
    const total = el('p', 'total');
    total.id = 'total';
    const hm = el('div', 'c960-heatmap');
    hm.id = 'heatmap';
    const note = el('p', 'caption', 'Rows: the bishops (dark-squared file, light-squared file); column groups: the ' +
                    "knights' code N1..N10, six columns each by the queen's code (standard numbering). Red favours " +
                    'White, blue Black; hatched: no games yet. Hover a cell for its numbers.');
    s.append(total, hm, note);
    const lead = section('Leading and trailing positions', 'leaders');
    const leadNote = el('p', 'caption');
    leadNote.id = 'leaders-note';
    const leadTable = table(['rank', 'position', 'back rank', 'games', 'W / D / L', 'score [95%]', 'shrunk [95%]',
                             'rank 95%'], 'leaders');
    lead.append(leadNote, leadTable);
    let heatmap = null, domainKey = '';
    return {
      show(results) {
        const rows = results.positions || [];
        const t = results.total || {};
        total.textContent = t.games
          ? `White's score ${t.score.toFixed(3)} (95% interval ${t.score_lo.toFixed(3)}-${t.score_hi.toFixed(3)}) ` +
            `over ${intText(t.games)} games: W ${intText(t.white_wins)}, D ${intText(t.draws)}, L ${intText(t.black_wins)}`
          : 'no games yet';
        // Colours centred on the overall score; the range covers 95% of the deviations.
        const mid = t.games ? t.score : 0.5;
        const dev = rows.filter((r) => r.games > 0).map((r) => Math.abs(r.score - mid)).sort((a, b) => a - b);
        const half = Math.max(0.02, dev.length ? dev[Math.min(dev.length - 1, Math.floor(0.95 * dev.length))] : 0.1);
        // Scores are in [0, 1]: the scale ends there too (a legend up to 1.17 would mean nothing).
        const domain = [Math.max(0, mid - half), mid, Math.min(1, mid + half)];
        const cells = rows.filter((r) => r.start_position >= 0).map((r) => ({
          sp: r.start_position,
          value: r.games > 0 ? r.score : null,
          lines: r.games > 0
            ? [`${r.start_position} ${C960Heatmap.backrank(r.start_position)}`,
               `games ${r.games} (W ${r.white_wins}, D ${r.draws}, L ${r.black_wins})`,
               `score ${r.score.toFixed(3)}, 95% interval ${r.score_lo.toFixed(3)}-${r.score_hi.toFixed(3)}`]
            : [`${r.start_position} ${C960Heatmap.backrank(r.start_position)}`, `no games yet (${r.games_planned} planned)`],
        }));
        // Re-drawn only when the colour scale moves (rounded), else recoloured in place.
        const key = domain.map((x) => x.toFixed(2)).join(',');
        if (!heatmap || key !== domainKey) {
          heatmap = C960Heatmap.render(hm, cells, { domain, palette: 'diverging', legend: "White's score",
                                                    format: (x) => x.toFixed(3) });
          domainKey = key;
        } else {
          heatmap.update(cells);
        }
        // Ranked positions only (20 games or more), by the score shrunk toward all positions'
        // (docs/report.md, Rankings): a list of 6-game positions would be luck.
        const ranked = rows.filter((r) => r.rank).sort((a, b) => a.rank - b.rank);
        const rk = results.ranking || {};
        const range = (lo, hi) => `${lo.toFixed(3)}-${hi.toFixed(3)}`;
        leadNote.textContent = ranked.length
          ? `By White's score shrunk toward the positions' mean ${rk.mean.toFixed(3)} (their true spread ` +
            `${rk.tau.toFixed(3)}, 95% ${range(rk.tau_lo, rk.tau_hi)}); rank 95%: the ranks a position can ` +
            `plausibly hold. Only positions with ${rk.min_games} games or more are ranked` +
            (ranked.length < rows.length ? ` (${intText(rows.length - ranked.length)} are not yet).` : '.')
          : t.games ? `Not ranked yet: ranks need ${rk.min_games} games a position (most so far: ${rk.most_games}).`
            : 'No games yet.';
        const tbody = leadTable.tBodies[0];
        tbody.textContent = '';
        leadTable.hidden = ranked.length === 0;  // no header row over an empty list
        const n = Math.min(5, Math.floor(ranked.length / 2));
        const pick = ranked.length <= 10 ? ranked : [...ranked.slice(0, n), ...ranked.slice(-n)];
        for (const r of pick) {
          const tr = el('tr');
          tr.appendChild(el('td', 'num', `#${r.rank}`));
          // Positions beyond the 960 (FENs, DFRC pairs) show their id and placement.
          tr.appendChild(el('td', 'num', r.start_position >= 0 ? r.start_position : r.id));
          tr.appendChild(el('td', 'mono', r.start_position >= 0 ? C960Heatmap.backrank(r.start_position)
                                                                : r.fen.split(' ')[0]));
          tr.appendChild(el('td', 'num', r.games));
          tr.appendChild(el('td', 'num', `${r.white_wins} / ${r.draws} / ${r.black_wins}`));
          tr.appendChild(el('td', 'num', `${r.score.toFixed(3)} [${range(r.score_lo, r.score_hi)}]`));
          tr.appendChild(el('td', 'num', `${r.shrunk.toFixed(3)} [${range(r.shrunk_lo, r.shrunk_hi)}]`));
          tr.appendChild(el('td', 'num', r.rank_lo ? `${r.rank_lo}-${r.rank_hi}` : ''));
          tbody.appendChild(tr);
        }
      },
    };
  }

  // Perft: counts per position (a heatmap when the roots are start positions) and the divide.
  function perftView() {
    const hs = section('Nodes by start position', 'heatmap-section');
    const hm = el('div', 'c960-heatmap');
    hm.id = 'heatmap';
    hs.append(hm, el('p', 'caption', 'Colour: log10 of the node count; hatched: not computed yet or not a root. ' +
                     'Hover a cell for its count.'));
    hs.hidden = true;
    const ts = section('Positions', 'positions');
    const posTable = table(['#', 'position', 'FEN', 'depth', 'nodes', ''], 'positions');
    ts.appendChild(posTable);
    const ds = section('First-move divide', 'divide');
    const divTitle = el('p', 'caption');
    const divTable = table(['move', 'nodes', 'share'], 'divide');
    ds.append(divTitle, divTable);
    let selected = null, last = null, heatmap = null;

    function showDivide() {
      const rows = last ? last.positions || [] : [];
      const r = rows.find((x) => x.index === selected) || rows.find((x) => x.start_position === 518) || rows[0];
      const tbody = divTable.tBodies[0];
      tbody.textContent = '';
      if (!r) return;
      selected = r.index;
      for (const tr of posTable.tBodies[0].rows) tr.classList.toggle('selected', Number(tr.dataset.index) === r.index);
      const moves = r.divide || [];
      divTitle.textContent = moves.length
        ? `${r.start_position >= 0 ? `position ${r.start_position}` : `root ${r.index}`} at depth ${r.depth}: ` +
          `${moves.length} moves${r.complete ? '' : ' (incomplete)'}`
        : 'no divide for this root (its units were split below the first move, or none is done yet)';
      const total = BigInt(r.nodes || 0);
      for (const m of moves) {
        const tr = el('tr');
        tr.appendChild(el('td', 'mono', m.move));
        tr.appendChild(el('td', 'num', BigInt(m.nodes).toLocaleString('en')));
        tr.appendChild(el('td', 'num', total > 0n ? `${(Number((BigInt(m.nodes) * 10000n) / total) / 100).toFixed(2)}%` : '—'));
        tbody.appendChild(tr);
      }
    }

    return {
      show(results) {
        last = results;
        const rows = results.positions || [];
        const tbody = posTable.tBodies[0];
        tbody.textContent = '';
        for (const r of rows) {
          const tr = el('tr', 'clickable');
          tr.dataset.index = String(r.index);
          tr.appendChild(el('td', 'num', r.index));
          tr.appendChild(el('td', 'num', r.start_position >= 0 ? r.start_position : '—'));
          tr.appendChild(el('td', 'mono fen', r.fen));
          tr.appendChild(el('td', 'num', r.depth));
          tr.appendChild(el('td', 'num', r.complete ? BigInt(r.nodes).toLocaleString('en') : `${BigInt(r.nodes).toLocaleString('en')} so far`));
          tr.appendChild(el('td', null, r.complete ? '' : 'running'));
          tr.addEventListener('click', () => { selected = r.index; showDivide(); });
          tbody.appendChild(tr);
        }
        showDivide();
        const sps = rows.filter((r) => r.start_position >= 0 && r.complete && BigInt(r.nodes) > 0n);
        if (rows.some((r) => r.start_position >= 0)) {
          hs.hidden = false;
          const logs = sps.map((r) => Math.log10(Number(r.nodes)));
          let lo = Math.min(...logs), hi = Math.max(...logs);
          if (!isFinite(lo)) { lo = 0; hi = 1; }
          if (hi - lo < 1e-9) hi = lo + 1;
          const cells = sps.map((r) => ({
            sp: r.start_position, value: Math.log10(Number(r.nodes)),
            lines: [`${r.start_position} ${C960Heatmap.backrank(r.start_position)}`,
                    `depth ${r.depth}: ${BigInt(r.nodes).toLocaleString('en')} nodes`],
          }));
          heatmap = C960Heatmap.render(hm, cells, { domain: [lo, (lo + hi) / 2, hi], palette: 'sequential',
                                                    legend: 'log10 nodes', format: (x) => x.toFixed(1) });
        }
      },
    };
  }

  if (page === 'job') jobPage(document.body.dataset.job);
  else dashboard();
})();
