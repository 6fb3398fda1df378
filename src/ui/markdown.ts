// A small Markdown renderer for the artifact viewer (preprocessing_report.md): headings,
// paragraphs, lists, fenced code, pipe tables, inline code, bold, italic and links. It builds
// DOM nodes from text, so nothing in the file can become markup; images are shown as their alt
// text (the viewer makes no requests on a document's behalf).

import { h } from './dom.js';

const INLINE = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*)|(_[^_\s][^_]*_)|(!?\[[^\]]*\]\([^)\s]*\))/;

function inline(text: string): Node[] {
  const out: Node[] = [];
  let rest = text;
  while (rest) {
    const m = INLINE.exec(rest);
    if (!m) {
      out.push(document.createTextNode(rest));
      break;
    }
    if (m.index > 0) out.push(document.createTextNode(rest.slice(0, m.index)));
    const tok = m[0];
    if (m[1]) out.push(h('code', {}, tok.slice(1, -1)));
    else if (m[2]) out.push(h('strong', {}, ...inline(tok.slice(2, -2))));
    else if (m[3] || m[4]) out.push(h('em', {}, ...inline(tok.slice(1, -1))));
    else {
      const link = /^(!?)\[([^\]]*)\]\(([^)\s]*)\)$/.exec(tok);
      const label = link?.[2] ?? tok;
      const href = link?.[3] ?? '';
      // Only same-site relative links or http(s); anything else (javascript:, data:) is plain text.
      if (link?.[1] === '!' || !/^(https?:\/\/|#|[\w./-]+$)/.test(href) || href.includes('..')) out.push(document.createTextNode(label));
      else out.push(h('a', { href, rel: 'noreferrer noopener' }, label));
    }
    rest = rest.slice(m.index + tok.length);
  }
  return out;
}

function tableCells(line: string): string[] {
  return line.trim().replace(/^\|/, '').replace(/\|$/, '').split('|').map((c) => c.trim());
}

export function renderMarkdown(text: string): HTMLElement {
  const root = h('div', { class: 'markdown' });
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (/^```/.test(line)) {
      const body: string[] = [];
      for (i++; i < lines.length && !/^```/.test(lines[i]!); i++) body.push(lines[i]!);
      i++;
      root.append(h('pre', {}, h('code', {}, body.join('\n'))));
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      const level = Math.min(6, heading[1]!.length + 1) as 2 | 3 | 4 | 5 | 6;
      root.append(h(`h${level}`, {}, ...inline(heading[2]!)));
      i++;
      continue;
    }
    if (/^\s*\|/.test(line) && i + 1 < lines.length && /^\s*\|?\s*:?-{2,}/.test(lines[i + 1]!)) {
      const head = tableCells(line);
      const rows: string[][] = [];
      for (i += 2; i < lines.length && /^\s*\|/.test(lines[i]!); i++) rows.push(tableCells(lines[i]!));
      root.append(
        h(
          'div',
          { class: 'table-wrap' },
          h('table', {}, h('thead', {}, h('tr', {}, ...head.map((c) => h('th', { scope: 'col' }, ...inline(c))))), h('tbody', {}, ...rows.map((r) => h('tr', {}, ...r.map((c) => h('td', {}, ...inline(c))))))),
        ),
      );
      continue;
    }
    const bullet = /^\s*([-*+]|\d+\.)\s+/;
    if (bullet.test(line)) {
      const ordered = /^\s*\d+\./.test(line);
      const list = h(ordered ? 'ol' : 'ul', {});
      for (; i < lines.length && bullet.test(lines[i]!); i++) list.append(h('li', {}, ...inline(lines[i]!.replace(bullet, ''))));
      root.append(list);
      continue;
    }
    if (line.trim() === '') {
      i++;
      continue;
    }
    const para: string[] = [];
    for (; i < lines.length && lines[i]!.trim() !== '' && !/^(#{1,6}\s|```|\s*\||\s*([-*+]|\d+\.)\s)/.test(lines[i]!); i++) para.push(lines[i]!);
    if (para.length === 0) {
      para.push(line);
      i++;
    }
    const p = h('p', {});
    para.forEach((l, k) => {
      if (k > 0) p.append(h('br'));
      p.append(...inline(l));
    });
    root.append(p);
  }
  return root;
}
