import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The import direction ESLint cannot see (style.md "Imports point down"):
 * no import cycle between source files, and none between domains. ESLint's
 * no-restricted-imports checks single imports (plugins → domains, domains →
 * jobs); a cycle needs the whole graph, read here with the TypeScript
 * compiler's own import scanner (every import, type-only ones included).
 */

const ROOT = resolve(import.meta.dirname, '..');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** File → the source files it imports (relative imports only; packages are leaves). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(join(ROOT, 'src'))) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, false);
    const targets = importedFiles
      .filter((i) => i.fileName.startsWith('.'))
      .map((i) => relative(ROOT, resolve(dirname(file), i.fileName.replace(/\.js$/, '.ts'))));
    graph.set(relative(ROOT, file), targets);
  }
  return graph;
}

/** The cycles of a graph: its strongly connected components with more than one node (Tarjan). */
function cycles(graph: Map<string, Iterable<string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

const domainOf = (file: string) => /^src\/domains\/([^/]+)\//.exec(file)?.[1];
/**
 * A domain's contract schemas (the Zod schemas and types of its routes and
 * events): the realtime contract names every domain's events, so importing
 * them is not a dependency on that domain's behaviour.
 */
const isContract = (file: string) => /\/(schemas|types)\.ts$/.test(file);

describe('import graph', () => {
  const graph = importGraph();

  it('reads the source tree', () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(graph.get('src/app.ts')).toContain('src/domains/realtime/plugin.ts');
  });

  it('has no cycle between source files', () => {
    expect(cycles(graph)).toEqual([]);
  });

  it('has no cycle between domains (imports of contract schemas aside)', () => {
    const domains = new Map<string, Set<string>>();
    for (const [file, targets] of graph) {
      const from = domainOf(file);
      if (from === undefined) continue;
      const to = domains.get(from) ?? new Set<string>();
      domains.set(from, to);
      for (const target of targets) {
        const d = domainOf(target);
        if (d !== undefined && d !== from && !isContract(target)) to.add(d);
      }
    }
    expect(domains.get('realtime')).toBeDefined();
    expect(cycles(domains)).toEqual([]);
  });

  it('has no domain reading job_runs, the scheduler’s own table (docs/architecture.md)', () => {
    const readers: string[] = [];
    for (const file of sourceFiles(join(ROOT, 'src/domains'))) {
      // The syntax tree, not the text: a comment may name the table; code may not (the `jobRuns` table object, or SQL naming it).
      const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
      const reads = (node: ts.Node): boolean =>
        (ts.isIdentifier(node) && node.text === 'jobRuns') ||
        ((ts.isStringLiteralLike(node) || ts.isTemplateLiteralToken(node)) && /\bjob_runs\b/.test(node.text)) ||
        ts.forEachChild(node, reads) === true;
      if (reads(source)) readers.push(relative(ROOT, file));
    }
    expect(sourceFiles(join(ROOT, 'src/domains')).length).toBeGreaterThan(50);
    expect(readers).toEqual([]);
  });
});
