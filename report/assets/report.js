// The report page's charts: reads the JSON in #c960-report-data (written by report.cpp) and draws
// the heatmap (heatmap.js) and the Chart.js charts. Static tables are plain HTML already.
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('c960-report-data').textContent);
  Chart.defaults.animation = false;  // screenshots and tests see the final picture at once
  Chart.defaults.font.family = 'system-ui, sans-serif';
  Chart.defaults.maintainAspectRatio = false;
  const charts = [];

  const heatmapElement = document.getElementById('heatmap');
  if (heatmapElement && data.heatmap) {
    const h = data.heatmap;
    C960Heatmap.render(heatmapElement, h.rows, {
      domain: h.domain, palette: h.palette, legend: h.legend,
      format: h.palette === 'sequential' ? (x) => x.toFixed(1) : (x) => x.toFixed(3),
    });
  }

  function canvas(id) { return document.getElementById(id); }

  if (data.histogram && canvas('histogram')) {
    const h = data.histogram;
    const labels = h.observed.map((_, i) => `${h.edges[i].toFixed(3)}–${h.edges[i + 1].toFixed(3)}`);
    charts.push(new Chart(canvas('histogram'), {
      data: {
        labels,
        datasets: [
          { type: 'bar', label: 'positions', data: h.observed, backgroundColor: 'rgba(178, 24, 43, 0.55)', order: 2 },
          { type: 'line', label: 'expected from sampling noise alone', data: h.expected, borderColor: '#2166ac',
            backgroundColor: '#2166ac', pointRadius: 2, tension: 0.25, order: 1 },
        ],
      },
      options: {
        scales: { x: { title: { display: true, text: "White's score" } },
                  y: { title: { display: true, text: 'positions' }, beginAtZero: true } },
      },
    }));
  }

  if (data.scatter && canvas('scatter')) {
    const s = data.scatter;
    const agree = s.points.filter((p) => !p.disagree), disagree = s.points.filter((p) => p.disagree);
    charts.push(new Chart(canvas('scatter'), {
      type: 'scatter',
      data: {
        datasets: [
          { label: 'positions', data: agree, backgroundColor: 'rgba(33, 102, 172, 0.5)', pointRadius: 3 },
          { label: 'intervals do not overlap', data: disagree, backgroundColor: '#b2182b', pointRadius: 4 },
          { type: 'line', label: 'equal', data: [{ x: 0, y: 0 }, { x: 1, y: 1 }], borderColor: '#999',
            borderDash: [4, 4], pointRadius: 0 },
        ],
      },
      options: {
        scales: { x: { min: 0, max: 1, title: { display: true, text: s.x } },
                  y: { min: 0, max: 1, title: { display: true, text: s.y } } },
        plugins: { tooltip: { callbacks: { label: (c) => `${c.raw.id ?? ''} (${c.raw.x.toFixed(3)}, ${c.raw.y.toFixed(3)})` } } },
      },
    }));
  }

  if (data.evaluations && canvas('eval-scatter')) {
    // Each engine's positions (centipawns, White's score) and its fitted logistic curve.
    const colours = ['#2166ac', '#b2182b', '#1b7837', '#762a83', '#e08214', '#01665e', '#8c510a', '#4d4d4d'];
    const datasets = [];
    data.evaluations.engines.forEach((e, k) => {
      const c = colours[k % colours.length];
      datasets.push({ label: e.name, data: e.points, backgroundColor: c, pointRadius: 3 });
      if (e.curve.length)
        datasets.push({ type: 'line', label: `${e.name}: fitted`, data: e.curve, borderColor: c, pointRadius: 0,
                        borderWidth: 1.5 });
    });
    charts.push(new Chart(canvas('eval-scatter'), {
      type: 'scatter',
      data: { datasets },
      options: {
        scales: { x: { title: { display: true, text: 'evaluation (centipawns, White)' } },
                  y: { title: { display: true, text: "White's score in the games" } } },
        plugins: { tooltip: { callbacks: { label: (c) => `${c.raw.id ?? ''} (${c.raw.x.toFixed(0)} cp, ${c.raw.y.toFixed(3)})` } } },
      },
    }));
  }

  if (data.counts && canvas('counts-chart')) {
    // Points, not bars: counts differ by tens of percent, and bars must start at zero.
    const points = data.counts.values.map((y, i) => ({ x: i, y, id: data.counts.labels[i] }));
    charts.push(new Chart(canvas('counts-chart'), {
      type: 'scatter',
      data: { datasets: [{ label: `nodes at depth ${data.depth}`, data: points, backgroundColor: '#31688e', pointRadius: 2 }] },
      options: {
        scales: { y: { title: { display: true, text: 'nodes' } },
                  x: { title: { display: true, text: 'position (in the order of the table)' },
                       ticks: { callback: (v) => data.counts.labels[v] ?? '' } } },
        plugins: { tooltip: { callbacks: { label: (c) => `${c.raw.id}: ${c.raw.y.toLocaleString('en')} nodes` } } },
      },
    }));
  }

  if (data.growth && data.growth.depths.length > 1 && canvas('growth-chart')) {
    charts.push(new Chart(canvas('growth-chart'), {
      type: 'line',
      data: { labels: data.growth.depths,
              datasets: [{ label: 'total nodes', data: data.growth.totals, borderColor: '#31688e', backgroundColor: '#31688e' }] },
      options: { scales: { y: { type: 'logarithmic', title: { display: true, text: 'nodes' } },
                           x: { title: { display: true, text: 'depth' } } } },
    }));
  }

  // Tables of class "sortable": a click on a heading sorts by that column (numbers by value, with
  // real minus signs and thin-space groups read as such; text alphabetically), a second click
  // reverses. A cell's data-sort, when present, is the key (the table's own order).
  function sortKey(cell) {
    const raw = cell.dataset.sort ?? cell.textContent;
    const t = raw.replace(/\u2212/g, '-').replace(/\u202f/g, '').trim();  // parseFloat stops at an interval's dash
    const x = parseFloat(t);
    return Number.isNaN(x) ? raw.trim().toLowerCase() : x;
  }
  for (const table of document.querySelectorAll('table.sortable')) {
    const heads = table.querySelectorAll('thead th');
    heads.forEach((th, col) => {
      th.addEventListener('click', () => {
        const up = th.getAttribute('aria-sort') !== 'ascending';
        heads.forEach((h) => { h.removeAttribute('aria-sort'); delete h.dataset.arrow; });
        th.setAttribute('aria-sort', up ? 'ascending' : 'descending');
        th.dataset.arrow = up ? ' \u25b2' : ' \u25bc';
        const body = table.tBodies[0];
        const rows = Array.from(body.rows).map((r) => [sortKey(r.cells[col]), r]);
        rows.sort(([a], [b]) => {
          if (typeof a !== typeof b) return typeof a === 'number' ? -1 : 1;  // numbers before text
          const c = a < b ? -1 : a > b ? 1 : 0;
          return up ? c : -c;
        });
        for (const [, r] of rows) body.appendChild(r);
      });
    });
  }

  // For tests and scripts: everything is drawn.
  document.body.dataset.rendered = String(charts.length);
})();
