"""What a picture test reads off a page in the browser (Playwright's page.evaluate): what
runs off the screen, numbers and headings broken over lines, chart markers on top of each
other, the colours of the chart's lines and of the mail's bars; and stripping a page of
its styles, as some mail programs do."""

from __future__ import annotations

from typing import Any

# Everything that runs past the right edge, but what sits in a frame that scrolls
# sideways and itself fits (the course chart on a phone).
_WIDE = """() => {
  const width = window.innerWidth;
  const inScroller = e => {
    for (let a = e.parentElement; a; a = a.parentElement) {
      const s = getComputedStyle(a);
      if ((s.overflowX === 'auto' || s.overflowX === 'scroll') &&
          a.getBoundingClientRect().right <= width + 1) return true;
    }
    return false;
  };
  const wide = [...document.querySelectorAll('body *')]
    .filter(e => e.getBoundingClientRect().right > width + 1 && !inScroller(e))
    .map(e => e.tagName + ' ' + (e.textContent || '').trim().slice(0, 40));
  return {scroll: document.documentElement.scrollWidth, width, wide: wide.slice(0, 8)};
}"""

# Words (in headings) and numbers (anywhere) drawn over more than one line.
_BROKEN = """() => {
  const lines = (node, start, end) => {
    const range = document.createRange();
    range.setStart(node, start); range.setEnd(node, end);
    const tops = new Set([...range.getClientRects()].filter(r => r.width > 0)
                                                    .map(r => Math.round(r.top)));
    return tops.size;
  };
  const broken = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!parent || parent.closest('script, style, title, svg, code, pre, .user-text')) continue;
    const heading = parent.closest('h1, h2, h3, th, caption, summary, label, button, nav');
    const pattern = heading ? /[\\p{L}\\p{N}]{2,}/gu : /\\d[\\d.,]*\\d/g;
    for (const m of node.data.matchAll(pattern)) {
      if (lines(node, m.index, m.index + m[0].length) > 1)
        broken.push((heading ? 'heading word ' : 'number ') + JSON.stringify(m[0]) +
                    ' in ' + JSON.stringify(node.data.trim().slice(0, 60)) + ' (' +
                    parent.tagName + '.' + parent.className + ' < ' +
                    (parent.parentElement || {}).tagName + ')');
    }
  }
  return broken.slice(0, 8);
}"""

# The course chart: markers at one spot must be one mark that names every seat on it;
# the latest turn (or the replayed one) shown when the frame scrolls, and then a note.
_COURSE = """() => {
  const svg = document.querySelector('#course svg.course-chart');
  if (!svg) return null;
  const marks = [...svg.querySelectorAll('g.mark')].map(g => {
    return {x: +g.dataset.x, y: +g.dataset.y, seats: g.dataset.seats,
            title: g.querySelector('title').textContent};
  });
  const clashes = [];
  for (let i = 0; i < marks.length; i++)
    for (let j = i + 1; j < marks.length; j++)
      if (Math.abs(marks[i].x - marks[j].x) < 3 && Math.abs(marks[i].y - marks[j].y) < 3)
        clashes.push(marks[i].seats + ' / ' + marks[j].seats);
  const plot = document.querySelector('#course .plot') || svg.parentElement;
  const frame = plot.getBoundingClientRect();
  const end = svg.querySelector('.current') || [...svg.querySelectorAll('text.end')].pop() || svg;
  const endBox = end.getBoundingClientRect();
  const note = document.querySelector('#course .scroll-note');
  return {
    marks, clashes: clashes.slice(0, 5),
    colours: [...svg.querySelectorAll('path')].filter(p => p.querySelector('title'))
                .map(p => p.getAttribute('stroke')),
    scrolls: plot.scrollWidth > plot.clientWidth + 1,
    noted: !!note && note.getBoundingClientRect().height > 0,
    latestShown: endBox.left >= frame.left - 1 && endBox.right <= frame.right + 1,
    fontPx: svg.getBoundingClientRect().width / svg.viewBox.baseVal.width * 14,
  };
}"""

# The bars of the odds and course charts: each cell's fill (bgcolor) and whether it is
# solid (holds) or a dashed bar (fails); the background they sit on.
_BARS = """() => {
  const fill = td => td.getAttribute('bgcolor');
  const bg = e => {
    for (let a = e; a; a = a.parentElement) {
      const c = getComputedStyle(a).backgroundColor;
      if (c && c !== 'rgba(0, 0, 0, 0)' && c !== 'transparent') return c;
    }
    return 'rgb(255, 255, 255)';
  };
  const bars = [...document.querySelectorAll('table.holds, table.fails')].map(t => ({
    holds: t.classList.contains('holds'),
    cells: [...t.querySelectorAll('td')].map(fill),
    background: bg(t.parentElement),
  }));
  const course = [...document.querySelectorAll('td[bgcolor][height]')]
    .filter(td => !td.closest('table.holds, table.fails'))
    .map(td => ({fill: fill(td), background: bg(td.parentElement)}));
  return {bars, course};
}"""

_STRIP = """() => {
  document.querySelectorAll('link[rel=stylesheet], style').forEach(e => e.remove());
  document.querySelectorAll('[style]').forEach(e => e.removeAttribute('style'));
}"""


def wide(page: Any) -> dict[str, Any]:
    found: dict[str, Any] = page.evaluate(_WIDE)
    return found


def broken_words(page: Any) -> list[str]:
    found: list[str] = page.evaluate(_BROKEN)
    return found


def course_chart(page: Any) -> dict[str, Any] | None:
    found: dict[str, Any] | None = page.evaluate(_COURSE)
    return found


def bars(page: Any) -> dict[str, Any]:
    found: dict[str, Any] = page.evaluate(_BARS)
    return found


def strip_styles(page: Any) -> None:
    page.evaluate(_STRIP)
