// Finds, without running anything, the line of the target each `compile_example*` function of a
// file returns: the first module-level class or function of that file named in its body.
export function targetLines(text) {
  const lines = text.split(/\r?\n/);
  const defs = new Map();
  lines.forEach((l, i) => {
    const m = /^(?:class|def)\s+([A-Za-z_]\w*)/.exec(l);
    if (m && !m[1].startsWith('compile_example')) defs.set(m[1], i + 1);
  });
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^def\s+(compile_example\w*)\s*\(/.exec(lines[i]);
    if (!m) continue;
    for (let j = i + 1; j < lines.length && (lines[j] === '' || /^\s/.test(lines[j])); j++) {
      const body = lines[j].replace(/#.*$/, '');
      const hit = [...body.matchAll(/\b([A-Za-z_]\w*)\b/g)].map((x) => x[1]).find((name) => defs.has(name));
      if (hit) {
        out.push({ example: m[1], target: hit, line: defs.get(hit) });
        break;
      }
    }
  }
  return out;
}

/** Workspace-relative modules a file imports as `from models.x import` / `import models.x`. */
export function importedFiles(text) {
  const out = new Set();
  for (const m of text.matchAll(/^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))/gm)) {
    const mod = m[1] ?? m[2];
    if (mod && !mod.startsWith('torch') && !mod.startsWith('__future__')) out.add(`${mod.replace(/\./g, '/')}.py`);
  }
  return [...out];
}
