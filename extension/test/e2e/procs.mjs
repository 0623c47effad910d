// Processes below a pid (Linux /proc), to see which Python processes the extension started.
import * as fs from 'node:fs';

function readProc(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    return { pid: Number(pid), ppid, cmdline };
  } catch {
    return undefined;
  }
}

export function descendants(root) {
  const all = fs
    .readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(readProc)
    .filter(Boolean);
  const children = new Map();
  for (const p of all) {
    if (!children.has(p.ppid)) children.set(p.ppid, []);
    children.get(p.ppid).push(p);
  }
  const out = [];
  const stack = [root];
  while (stack.length) {
    const pid = stack.pop();
    for (const c of children.get(pid) ?? []) {
      out.push(c);
      stack.push(c.pid);
    }
  }
  return out;
}

/** Python processes below root, split into the daemon and everything else (workers). */
export function pythonProcesses(root) {
  const py = descendants(root).filter((p) => /python/.test(p.cmdline[0] ?? '') || /python/.test(p.cmdline[1] ?? ''));
  const isDaemon = (p) => p.cmdline.join(' ').includes('-m dynamo_lens serve');
  return { daemons: py.filter(isDaemon), others: py.filter((p) => !isDaemon(p)) };
}
