// Expected findings are marked in example_workspace sources: `# expect: graph_break GB0170`,
// `# expect: recompile-warning`, `# expect: recompile-info`. A trailing marker applies to its own
// line; a marker alone on a line applies to the next code line.
import * as fs from 'node:fs';
import * as path from 'node:path';

const MARK = /#\s*expect:\s*([A-Za-z_-]+)(?:\s+(GB\d+))?/;

export function parseMarkers(text, file) {
  const lines = text.split(/\r?\n/);
  const out = [];
  let pending = [];
  lines.forEach((line, i) => {
    const m = MARK.exec(line);
    const code = line.replace(/#.*$/, '').trim();
    if (m && code === '') {
      pending.push(m);
      return;
    }
    const here = m ? [m, ...pending] : pending;
    if (code !== '') {
      for (const mm of here) out.push(toMarker(mm, file, i + 1));
      pending = [];
    }
  });
  return out;
}

function toMarker(m, file, line) {
  const raw = m[1];
  let kind = raw;
  let severity;
  if (raw.startsWith('recompile')) {
    kind = 'recompile';
    severity = raw.split('-')[1] ?? 'warning';
  } else if (raw === 'graph_break') {
    severity = 'any';
  } else if (raw === 'fallback') {
    severity = 'warning';
  }
  return { file, line, kind, severity, code: m[2], raw };
}

export function workspaceMarkers(root) {
  const out = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      if (e.name.startsWith('.') || e.name === '__pycache__') continue;
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.py')) out.push(...parseMarkers(fs.readFileSync(p, 'utf8'), path.relative(root, p)));
    }
  };
  walk(root);
  return out;
}
