// The core's files import each other in no circle, types included: a type lives with the module that owns
// it, and a room's files are read from the top down. Read from the import lines (static, `import type`,
// `export ... from`) of every source file but the tests.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const SRC = __dirname;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Each file (relative to src/) and the files it imports. */
function graph(files: string[]): Map<string, string[]> {
  const edges = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+'(\.[^']+)'/gms)].map((m) =>
      relative(SRC, resolve(dirname(file), (m[1] as string).replace(/\.js$/, '.ts'))),
    );
    edges.set(relative(SRC, file), targets);
  }
  return edges;
}

/** The circles of `edges`: each strongly connected set of two files or more, or one that imports itself (Tarjan). */
function circles(edges: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v) as number);
    stack.push(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) !== index.get(v)) return;
    const set: string[] = [];
    for (let w = stack.pop(); w !== undefined; w = w === v ? undefined : stack.pop()) set.push(w);
    if (set.length > 1 || (edges.get(v) ?? []).includes(v)) found.push(set.sort());
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe("the core's source files", () => {
  const edges = graph(sources(SRC));

  it('are all read, and every import names a file that is there', () => {
    expect(edges.size).toBeGreaterThan(50);
    const missing = [...edges].flatMap(([file, targets]) => targets.filter((t) => !edges.has(t)).map((t) => `${file} -> ${t}`));
    expect(missing.filter((m) => !m.endsWith('lua.generated.ts'))).toEqual([]);
  });

  it('import each other in no circle, types included', () => {
    expect(circles(edges)).toEqual([]);
  });

  it('a circle is found when there is one (the check can fail)', () => {
    const made = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ]);
    expect(circles(made)).toEqual([['a.ts', 'b.ts', 'c.ts']]);
  });
});
