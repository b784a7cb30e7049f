// C960Heatmap: the 960 Chess960 start positions as a grid of coloured cells with a tooltip.
// Shared by the report (c960 report) and the coordinator's dashboard; no dependencies.
//
//   const hm = C960Heatmap.render(element, rows, options);
//   hm.update(rows);  // recolour in place (live pages)
//
// rows: [{sp: 0..959, value: number or null, lines: ["tooltip line", ...]}]; positions without a
// row are drawn empty. options: {domain: [low, middle, high], palette: "diverging" | "sequential",
// legend: "caption of the colour scale", format: number -> string (legend labels)}.
//
// Layout (standard Scharnagl numbering n = 96 knights + 16 queen + 4 darkBishop + lightBishop):
// row n % 16 (4 groups by the dark-squared bishop's file, 4 rows each by the light-squared one),
// column n / 16 (10 groups by the knights' code, 6 columns each by the queen's code).
(function (global) {
  'use strict';

  const KNIGHTS = [[0, 1], [0, 2], [0, 3], [0, 4], [1, 2], [1, 3], [1, 4], [2, 3], [2, 4], [3, 4]];
  const PALETTES = {
    // ColorBrewer RdBu (reversed): Black's advantage blue, White's red.
    diverging: ['#2166ac', '#67a9cf', '#d1e5f0', '#f7f7f7', '#fddbc7', '#ef8a62', '#b2182b'],
    // viridis
    sequential: ['#440154', '#443983', '#31688e', '#21918c', '#35b779', '#90d743', '#fde725'],
  };
  const EMPTY = '#d4d4d4';

  // The white back rank of start position sp, e.g. 518 -> "RNBQKBNR".
  function backrank(sp) {
    const rank = Array(8).fill('.');
    const placeNth = (n, piece) => {
      for (let i = 0; i < 8; i++) if (rank[i] === '.' && n-- === 0) { rank[i] = piece; return; }
    };
    let n = sp;
    rank[2 * (n % 4) + 1] = 'B'; n = Math.floor(n / 4);
    rank[2 * (n % 4)] = 'B'; n = Math.floor(n / 4);
    placeNth(n % 6, 'Q'); n = Math.floor(n / 6);
    placeNth(KNIGHTS[n][1], 'N');
    placeNth(KNIGHTS[n][0], 'N');
    placeNth(0, 'R'); placeNth(0, 'K'); placeNth(0, 'R');
    return rank.join('');
  }

  function hexToRgb(h) {
    return [parseInt(h.slice(1, 3), 16), parseInt(h.slice(3, 5), 16), parseInt(h.slice(5, 7), 16)];
  }

  // Colour of a value: low..middle onto the first half of the palette, middle..high the second.
  function color(value, domain, paletteName) {
    if (value === null || value === undefined || !isFinite(value)) return EMPTY;
    const stops = PALETTES[paletteName] || PALETTES.diverging;
    const [lo, mid, hi] = domain;
    let t;
    if (value <= mid) t = mid > lo ? 0.5 * (value - lo) / (mid - lo) : 0.5;
    else t = hi > mid ? 0.5 + 0.5 * (value - mid) / (hi - mid) : 0.5;
    t = Math.min(1, Math.max(0, t)) * (stops.length - 1);
    const i = Math.min(stops.length - 2, Math.floor(t)), f = t - i;
    const a = hexToRgb(stops[i]), b = hexToRgb(stops[i + 1]);
    const c = a.map((x, k) => Math.round(x + f * (b[k] - x)));
    return `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
  }

  function el(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // Grid tracks: 1 is the labels; groups are separated by an empty gap track.
  const columnTrack = (c) => 2 + Math.floor(c / 6) * 7 + (c % 6);
  const rowTrack = (r) => 2 + Math.floor(r / 4) * 5 + (r % 4);
  const FILES_DARK = 'aceg', FILES_LIGHT = 'bdfh';

  function render(element, rows, options) {
    options = options || {};
    const domain = options.domain || [0, 0.5, 1];
    const palette = options.palette || 'diverging';
    const format = options.format || ((x) => (Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(3)));
    element.textContent = '';
    element.classList.add('c960-heatmap');

    const grid = el('div', 'hm-grid');
    grid.setAttribute('role', 'grid');
    grid.setAttribute('aria-label', 'Chess960 start positions');
    // CSS cannot nest repeat(): label track, then groups of cells each followed by a gap track.
    grid.style.gridTemplateColumns = 'auto ' + 'repeat(6, var(--hm-cell)) var(--hm-gap) '.repeat(10);
    grid.style.gridTemplateRows = 'auto ' + 'repeat(4, var(--hm-cell)) var(--hm-gap) '.repeat(4);
    for (let g = 0; g < 10; g++) {
      const h = el('div', 'hm-col-label', 'N' + (g + 1));
      h.style.gridRow = '1';
      h.style.gridColumn = `${columnTrack(g * 6)} / span 6`;
      h.title = `knights' code ${g}`;
      grid.appendChild(h);
    }
    for (let r = 0; r < 16; r++) {
      const h = el('div', 'hm-row-label', `B${FILES_DARK[r >> 2]} B${FILES_LIGHT[r & 3]}`);
      h.style.gridRow = String(rowTrack(r));
      h.style.gridColumn = '1';
      grid.appendChild(h);
    }
    const cells = new Array(960);
    for (let sp = 0; sp < 960; sp++) {
      const cell = el('div', 'hm-cell');
      cell.dataset.sp = String(sp);
      cell.style.gridRow = String(rowTrack(sp % 16));
      cell.style.gridColumn = String(columnTrack(Math.floor(sp / 16)));
      cells[sp] = cell;
      grid.appendChild(cell);
    }
    element.appendChild(grid);

    const tooltip = el('div', 'hm-tooltip');
    tooltip.setAttribute('role', 'tooltip');
    tooltip.hidden = true;
    element.appendChild(tooltip);

    if (options.legend !== false) {
      const legend = el('div', 'hm-legend');
      const stops = PALETTES[palette] || PALETTES.diverging;
      const bar = el('span', 'hm-legend-bar');
      bar.style.background = `linear-gradient(to right, ${stops.join(', ')})`;
      legend.append(el('span', 'hm-legend-caption', options.legend || ''), el('span', 'hm-legend-value', format(domain[0])),
                    bar, el('span', 'hm-legend-value', format(domain[2])),
                    el('span', 'hm-legend-mid', `middle ${format(domain[1])}`));
      element.appendChild(legend);
    }

    let bySp = new Map();
    function update(newRows) {
      bySp = new Map();
      for (const row of newRows) if (row && row.sp >= 0 && row.sp < 960) bySp.set(row.sp, row);
      for (let sp = 0; sp < 960; sp++) {
        const row = bySp.get(sp);
        const value = row ? row.value : null;
        cells[sp].style.backgroundColor = color(value, domain, palette);  // not 'background': it would reset the stripes
        cells[sp].classList.toggle('hm-empty', value === null || value === undefined || !isFinite(value));
        cells[sp].setAttribute('aria-label', row && row.lines ? row.lines.join('; ') : `${sp} ${backrank(sp)}`);
      }
    }

    function show(cell, event) {
      const sp = Number(cell.dataset.sp);
      const row = bySp.get(sp);
      const lines = row && row.lines && row.lines.length ? row.lines : [`${sp} ${backrank(sp)}`, 'no data'];
      tooltip.textContent = '';
      lines.forEach((line, i) => tooltip.appendChild(el('div', i ? 'hm-tip-line' : 'hm-tip-head', line)));
      tooltip.hidden = false;
      move(event, cell);
    }
    function move(event, cell) {
      const box = element.getBoundingClientRect();
      const c = cell.getBoundingClientRect();
      let x = (event && event.clientX ? event.clientX : c.right) - box.left + 12;
      const y = (event && event.clientY ? event.clientY : c.bottom) - box.top + 12;
      // Keep it inside the element's width.
      if (x + tooltip.offsetWidth > element.clientWidth) x = Math.max(0, x - tooltip.offsetWidth - 24);
      tooltip.style.left = `${x}px`;
      tooltip.style.top = `${y}px`;
    }
    grid.addEventListener('mouseover', (e) => {
      const cell = e.target.closest('.hm-cell');
      if (cell) show(cell, e);
    });
    grid.addEventListener('mousemove', (e) => {
      const cell = e.target.closest('.hm-cell');
      if (cell && !tooltip.hidden) move(e, cell);
    });
    grid.addEventListener('mouseleave', () => { tooltip.hidden = true; });

    update(rows || []);
    return { update, cells, tooltip };
  }

  global.C960Heatmap = { render, backrank, color, PALETTES };
})(typeof window !== 'undefined' ? window : globalThis);
