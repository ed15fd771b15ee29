/**
 * Reads the source of every workspace package and checks its imports against the layers (layers.ts): each package
 * imports and depends on only what its layer may, reaches into no other package's files by a relative path, and no
 * import loop ties files of a package or packages together. Type-only and dynamic imports count: a loop through them
 * still means neither module can be understood, tested or moved without the other.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { forbidden, LAYERS, type Layer } from './layers.ts';

/** The repository's root. */
export const ROOT = resolve(import.meta.dirname, '../../..');

/** A workspace package: its name, its directory relative to the root, the workspace packages its manifest names. */
export interface WorkspacePackage {
  readonly name: string;
  readonly dir: string;
  readonly dependsOn: readonly string[];
}

const GROUPS = ['packages', 'apps', 'tooling'];
const SOURCE = /\.[cm]?[jt]sx?$/;
const SKIPPED_DIRS = new Set(['node_modules', 'dist', 'coverage']);

/** The packages under packages/, apps/ and tooling/ (directories with a package.json), by directory. */
export function workspacePackages(root: string): WorkspacePackage[] {
  const found: WorkspacePackage[] = [];
  for (const group of GROUPS) {
    let names: string[];
    try {
      names = readdirSync(join(root, group)).sort();
    } catch {
      continue;
    }
    for (const name of names) {
      const dir = `${group}/${name}`;
      let manifest: Record<string, Record<string, string> | string | undefined>;
      try {
        manifest = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8'));
      } catch {
        continue;
      }
      const deps = ['dependencies', 'devDependencies', 'peerDependencies', 'optionalDependencies'].flatMap((field) =>
        Object.keys((manifest[field] as Record<string, string> | undefined) ?? {}),
      );
      found.push({ name: manifest.name as string, dir, dependsOn: [...new Set(deps)].sort() });
    }
  }
  return found;
}

/** Source files under `dir/src`, sorted (declaration files, build output and dependencies left out). */
function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  const walk = (at: string) => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = readdirSync(at, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (entry.name.startsWith('.') || SKIPPED_DIRS.has(entry.name)) continue;
      const path = join(at, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile() && SOURCE.test(entry.name) && !/\.d\.[cm]?ts$/.test(entry.name)) files.push(path);
    }
  };
  walk(join(dir, 'src'));
  return files.sort();
}

/** Every module specifier `file` names: static, type-only, re-exported, dynamic, `require()`d. */
function specifiersOf(file: string): string[] {
  return ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles.map((f) => f.fileName);
}

const isFile = (path: string) => {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
};

/** The file a relative specifier names, as TypeScript and Node resolve it, or undefined. */
function resolveRelative(from: string, specifier: string): string | undefined {
  const base = resolve(dirname(from), specifier);
  const candidates = [base];
  const js = /\.([cm]?)js(x?)$/.exec(base);
  if (js !== null) candidates.push(`${base.slice(0, js.index)}.${js[1]}ts${js[2]}`);
  for (const ext of ['.ts', '.tsx', '.mts', '.js', '.mjs']) candidates.push(base + ext, join(base, `index${ext}`));
  return candidates.find(isFile);
}

/** The workspace package a bare specifier names (`@evtrace/x/sub` names `@evtrace/x`), or undefined. */
function packageNamed(specifier: string, names: ReadonlySet<string>): string | undefined {
  const name = specifier.split('/').slice(0, 2).join('/');
  return names.has(name) ? name : undefined;
}

/**
 * The strongly connected components of a graph with more than one node or a node importing itself: each is a set of
 * modules tied in loops (Tarjan's algorithm).
 */
function loops(nodes: readonly string[], edges: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
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
    if (component.length > 1 || edges.get(v)?.has(v)) found.push(component.sort());
  };
  for (const v of nodes) if (!index.has(v)) visit(v);
  return found;
}

/** A shortest loop from `start` back to itself through `within`: `[start, ..., start]`. */
function shortestLoop(start: string, edges: ReadonlyMap<string, ReadonlySet<string>>, within: ReadonlySet<string>) {
  const previous = new Map<string, string>();
  let frontier = [start];
  while (frontier.length > 0) {
    const next: string[] = [];
    for (const v of frontier) {
      for (const w of [...(edges.get(v) ?? [])].sort()) {
        if (!within.has(w)) continue;
        if (w === start) {
          const path = [start];
          for (let at = v; at !== start; at = previous.get(at)!) path.unshift(at);
          return [start, ...path];
        }
        if (previous.has(w)) continue;
        previous.set(w, v);
        next.push(w);
      }
    }
    frontier = next;
  }
  return [start];
}

function loopText(component: readonly string[], edges: ReadonlyMap<string, ReadonlySet<string>>): string {
  const loop = shortestLoop(component[0]!, edges, new Set(component));
  const all = component.length > loop.length - 1 ? `; ${component.length} tied in all: ${component.join(', ')}` : '';
  return `${loop.join(' → ')}${all}`;
}

/**
 * Checks the workspace at `root` and returns its problems, one line each, sorted; none when the imports keep to the
 * layers. `layers` places each package (default {@link LAYERS}).
 */
export function checkImports(root: string, layers: Readonly<Record<string, Layer>> = LAYERS): string[] {
  const packages = workspacePackages(root);
  const names = new Set(packages.map((p) => p.name));
  const problems: string[] = [];
  const packageEdges = new Map<string, Set<string>>(packages.map((p) => [p.name, new Set<string>()]));
  const dirOwner = (path: string) =>
    packages.find((p) => !relative(join(root, p.dir), path).startsWith('..'))?.dir ?? relative(root, dirname(path));
  /** Why `from` may not use `to`, or undefined (unplaced packages are reported once, on their own). */
  const why = (from: string, to: string) =>
    from === to || layers[from] === undefined || layers[to] === undefined
      ? undefined
      : forbidden(layers[from], layers[to]);

  for (const pkg of packages) {
    if (layers[pkg.name] === undefined) {
      problems.push(
        `${pkg.dir}: ${pkg.name} has no layer: give it one in tooling/architecture/src/layers.ts and LAYOUT.md`,
      );
    }
    for (const dep of pkg.dependsOn) {
      if (!names.has(dep)) continue;
      if (dep !== pkg.name) packageEdges.get(pkg.name)!.add(dep);
      const reason = why(pkg.name, dep);
      if (reason !== undefined) problems.push(`${pkg.dir}/package.json: depends on ${dep}: ${reason}`);
    }

    const dir = join(root, pkg.dir);
    const files = sourceFiles(dir);
    const inPackage = new Set(files);
    const edges = new Map<string, Set<string>>(files.map((f) => [f, new Set<string>()]));
    for (const file of files) {
      const at = relative(root, file);
      for (const specifier of specifiersOf(file)) {
        if (specifier.startsWith('.')) {
          const target = resolveRelative(file, specifier);
          if (target === undefined) continue;
          if (relative(dir, target).startsWith(`..${sep}`)) {
            problems.push(`${at}: imports ${specifier}, a file of ${dirOwner(target)}: import that package by name`);
          } else if (inPackage.has(target)) edges.get(file)!.add(target);
          continue;
        }
        const dep = packageNamed(specifier, names);
        if (dep === undefined || dep === pkg.name) continue;
        packageEdges.get(pkg.name)!.add(dep);
        const reason = why(pkg.name, dep);
        if (reason !== undefined) problems.push(`${at}: imports ${dep}: ${reason}`);
      }
    }
    const short = new Map(
      [...edges].map(([f, to]) => [relative(dir, f), new Set([...to].map((t) => relative(dir, t)))]),
    );
    for (const component of loops([...short.keys()], short)) {
      problems.push(`${pkg.dir}: import loop: ${loopText(component, short)}`);
    }
  }
  for (const component of loops([...packageEdges.keys()].sort(), packageEdges)) {
    problems.push(`package import loop: ${loopText(component, packageEdges)}`);
  }
  return problems.sort();
}
