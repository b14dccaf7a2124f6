"""The layout check the browser tests run on a page: JavaScript that reads every box of the page's main area and
returns what a user would see as broken. Its parts: sibling Streamlit elements whose boxes overlap; texts inside a
chart that overprint each other (rotated axis labels aside: their boxes are slanted); a button, picker or tab label
cut short (its scroll width past its visible width); a chart drawn wider than its column (a chart whose own box
scrolls sideways excepted); a legend outside its drawing, its bordered card or the part of its chart's box in view (a
legend to scroll to is a legend cut off); a text inside a chart cut short with "…"; a data table whose columns do
not fit its width (the last ones cut off until scrolled to)."""
from __future__ import annotations

# opens every closed expander of the main area; the number opened
OPEN_EXPANDERS_JS = """() => {
  let n = 0;
  for (const s of document.querySelectorAll('[data-testid="stMain"] details:not([open]) > summary')) { s.click(); n++; }
  return n;
}"""
LAYOUT_CHECK_JS = r"""() => {
  const out = {overlap: [], textOverlap: [], truncated: [], wider: [], legendOut: [], textCut: [], tableScrolls: []};
  const visible = (r) => r.width > 1 && r.height > 1;
  const hit = (a, b, slack) => a.left < b.right - slack && b.left < a.right - slack
                            && a.top < b.bottom - slack && b.top < a.bottom - slack;
  const name = (e) => ((e.getAttribute('class') || '').match(/st-key-\S+/)?.[0]
                       || e.textContent.trim().replace(/\s+/g, ' ').slice(0, 50));
  const main = document.querySelector('[data-testid="stMain"]');
  for (const block of main.querySelectorAll('[data-testid="stVerticalBlock"], [data-testid="stHorizontalBlock"]')) {
    const kids = [...block.children].filter((k) => getComputedStyle(k).position !== 'fixed'
                   && getComputedStyle(k).position !== 'absolute')
      .map((k) => [k, k.getBoundingClientRect()]).filter(([, r]) => visible(r));
    kids.forEach(([a, ra], i) => kids.slice(i + 1).forEach(([b, rb]) => {
      if (hit(ra, rb, 2)) out.overlap.push([name(a), name(b)]);
    }));
  }
  for (const chart of main.querySelectorAll('[data-testid="stVegaLiteChart"]')) {
    const svg = chart.querySelector('svg');
    const box = chart.closest('[data-testid="stElementContainer"]');
    const cname = (box.previousElementSibling?.textContent || chart.textContent || '').trim().slice(0, 50);
    const column = chart.closest('[data-testid="stColumn"]') || chart.closest('[data-testid="stMainBlockContainer"]');
    const drawing = chart.querySelector('svg, canvas');
    if (!drawing) continue;
    const drawn = drawing.getBoundingClientRect(), room = column.getBoundingClientRect();
    const scrolls = getComputedStyle(box).overflowX === 'auto' || getComputedStyle(chart).overflowX === 'auto';
    if (drawn.right > room.right + 1 && !scrolls) out.wider.push([cname, Math.round(drawn.right - room.right)]);
    if (!svg) continue;
    const texts = [...svg.querySelectorAll('text')].filter((t) => t.textContent.trim()
        && !/rotate\(-?[1-9]/.test(t.getAttribute('transform') || '')
        && t.getAttribute('opacity') !== '0' && getComputedStyle(t).opacity !== '0')  // (hidden by labelOverlap)
      .map((t) => [t.textContent.trim(), t.getBoundingClientRect()]).filter(([, r]) => visible(r))
      .sort((a, b) => a[1].left - b[1].left);
    for (let i = 0; i < texts.length; i++) {
      for (let j = i + 1; j < texts.length && texts[j][1].left < texts[i][1].right; j++) {
        if (hit(texts[i][1], texts[j][1], 1)) { out.textOverlap.push([cname, texts[i][0], texts[j][0]]); }
      }
    }
    for (const [text] of texts) if (text.endsWith('…')) out.textCut.push([cname, text]);
    const clip = svg.getBoundingClientRect();
    const card = box.closest('[data-testid="stVerticalBlockBorderWrapper"], [data-testid="stLayoutWrapper"]');
    const cardBox = card ? card.getBoundingClientRect() : clip;
    const inView = Math.min(clip.right, cardBox.right, box.getBoundingClientRect().right, room.right + 1);
    for (const legend of svg.querySelectorAll('.role-legend')) {
      const r = legend.getBoundingClientRect();
      if (!visible(r)) continue;
      if (r.right > inView + 1 || r.bottom > clip.bottom + 1 || r.left < clip.left - 1)
        out.legendOut.push([cname, Math.round(r.right - clip.right), Math.round(r.right - inView)]);
    }
  }
  for (const e of main.querySelectorAll('button *, label *, [data-baseweb="select"] *, [data-baseweb="tab"] *')) {
    if (!e.textContent.trim() || e.clientWidth === 0 || getComputedStyle(e).overflowX === 'visible') continue;
    if (e.scrollWidth > e.clientWidth + 1) out.truncated.push(e.textContent.trim().slice(0, 40));
  }
  for (const table of main.querySelectorAll('[data-testid="stDataFrame"]')) {
    const scroller = table.querySelector('.dvn-scroller');
    if (scroller && scroller.clientWidth > 0 && scroller.scrollWidth > scroller.clientWidth + 1) {
      const box = table.closest('[data-testid="stElementContainer"]');
      out.tableScrolls.push([name(box || table), scroller.scrollWidth, scroller.clientWidth]);
    }
  }
  for (const e of main.querySelectorAll('input[role="combobox"]')) {  // a picker's chosen value
    if (e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1) out.truncated.push(e.value.slice(0, 40));
  }
  return out;
}"""
