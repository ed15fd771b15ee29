#!/usr/bin/env node
/**
 * Renames evtrace's error codes to `ERR_<PKG>_<WHAT>` (issue 27, item 4) in the source, tests and documentation of
 * packages/, apps/ and tooling/ and in the root's Markdown files. Idempotent: no new name is an old one, so a second
 * run changes nothing; run it again after merging a branch written against the old codes.
 *
 *   node tooling/scripts/rename-error-codes.mjs           rename, listing every file changed
 *   node tooling/scripts/rename-error-codes.mjs --check   change nothing; exit 1 if an old code is left
 *
 * A few old codes belonged to two or three packages (ERR_ARGUMENT, ERR_OUTPUT, ERR_PERMISSION...). A rule of SITES
 * below says whose such a code is at a place; inside a package it is otherwise the package's own, or that of its one
 * dependency that has it. An occurrence nothing decides stops the run before anything is written, naming the file
 * and line: add a rule. Every occurrence decided by a rule or a dependency is listed, so that whoever merges sees
 * which meaning each got. Longer names may push a line past the width: run `pnpm exec biome check --write` on the
 * files it lists.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');

/** Old code → new code, per package (the directory under packages/). */
const RENAMES = {
  ringbuf: {
    ERR_ARGUMENT: 'ERR_RINGBUF_ARGUMENT',
    ERR_REGION: 'ERR_RINGBUF_REGION',
    ERR_BAD_MAGIC: 'ERR_RINGBUF_BAD_MAGIC',
    ERR_VERSION: 'ERR_RINGBUF_VERSION',
    ERR_BYTE_ORDER: 'ERR_RINGBUF_BYTE_ORDER',
    ERR_CORRUPT_HEADER: 'ERR_RINGBUF_CORRUPT_HEADER',
    ERR_CORRUPT_PAGE: 'ERR_RINGBUF_CORRUPT_PAGE',
    ERR_RECORD_TOO_LARGE: 'ERR_RINGBUF_RECORD_TOO_LARGE',
    ERR_WRITER_BUSY: 'ERR_RINGBUF_WRITER_BUSY',
    ERR_READERS_FULL: 'ERR_RINGBUF_READERS_FULL',
    ERR_WRITER_MODEL: 'ERR_RINGBUF_WRITER_MODEL',
    ERR_CLOSED: 'ERR_RINGBUF_CLOSED',
  },
  // ERR_TRACE_FORMAT, ERR_TRACE_DAT and ERR_TRACE_INPUT had the tag already.
  'trace-format': {
    ERR_TSDL: 'ERR_TRACE_TSDL',
    ERR_CTF_PACKET: 'ERR_TRACE_CTF_PACKET',
    ERR_CTF_WRITE: 'ERR_TRACE_CTF_WRITE',
    ERR_FTRACE_FORMAT: 'ERR_TRACE_FTRACE_FORMAT',
    ERR_FTRACE_PAGE: 'ERR_TRACE_FTRACE_PAGE',
    ERR_OUTPUT: 'ERR_TRACE_OUTPUT',
    ERR_JSON_EVENT: 'ERR_TRACE_JSON_EVENT',
  },
  // The agent's error replies and the client's own failures; ERR_AGENT_CONNECT and ERR_AGENT_CLOSED had the tag.
  'agent-protocol': {
    ERR_BAD_MESSAGE: 'ERR_AGENT_BAD_MESSAGE',
    ERR_TOO_LARGE: 'ERR_AGENT_TOO_LARGE',
    ERR_HELLO_REQUIRED: 'ERR_AGENT_HELLO_REQUIRED',
    ERR_VERSION: 'ERR_AGENT_VERSION',
    ERR_UNKNOWN_OP: 'ERR_AGENT_UNKNOWN_OP',
    ERR_NO_SESSION: 'ERR_AGENT_NO_SESSION',
    ERR_SESSION_EXISTS: 'ERR_AGENT_SESSION_EXISTS',
    ERR_SESSION_STATE: 'ERR_AGENT_SESSION_STATE',
    ERR_EVENT: 'ERR_AGENT_EVENT',
    ERR_FILTER: 'ERR_AGENT_FILTER',
    ERR_SOURCE: 'ERR_AGENT_SOURCE',
    ERR_NO_BUFFER: 'ERR_AGENT_NO_BUFFER',
    ERR_OUTPUT: 'ERR_AGENT_OUTPUT',
    ERR_LIMIT: 'ERR_AGENT_LIMIT',
    ERR_PERMISSION: 'ERR_AGENT_PERMISSION',
    ERR_INTERNAL: 'ERR_AGENT_INTERNAL',
    ERR_PROTOCOL_TOO_LARGE: 'ERR_AGENT_REPLY_TOO_LARGE',
    ERR_PROTOCOL_MESSAGE: 'ERR_AGENT_BAD_REPLY',
    ERR_ARGUMENT: 'ERR_AGENT_ARGUMENT',
  },
  'persistent-events': {
    ERR_NAME: 'ERR_PERSISTENT_NAME',
    ERR_ARGUMENT: 'ERR_PERSISTENT_ARGUMENT',
    ERR_EXISTS: 'ERR_PERSISTENT_EXISTS',
    ERR_NOT_FOUND: 'ERR_PERSISTENT_NOT_FOUND',
    ERR_PERMISSION: 'ERR_PERSISTENT_PERMISSION',
    ERR_CORRUPT: 'ERR_PERSISTENT_CORRUPT',
    ERR_WRITER_BUSY: 'ERR_PERSISTENT_WRITER_BUSY',
    ERR_READ_ONLY: 'ERR_PERSISTENT_READ_ONLY',
    ERR_CLOSED: 'ERR_PERSISTENT_CLOSED',
    ERR_UNSUPPORTED: 'ERR_PERSISTENT_UNSUPPORTED',
    ERR_IO: 'ERR_PERSISTENT_IO',
  },
  // ERR_KMEM_INPUT and ERR_KMEM_OPTION had the tag; kmemtrace's binary records are its relay files.
  kmemtrace: {
    ERR_KMEMTRACE_ABI: 'ERR_KMEM_RELAY_ABI',
    ERR_KMEMTRACE_RECORD: 'ERR_KMEM_RELAY_RECORD',
    ERR_PERF_SCRIPT: 'ERR_KMEM_PERF_SCRIPT',
  },
  // filters (FILTER), tracefs (TRACEFS), hw-bts (BTS), hw-mce (MCE) and the apps' CONFIG, METRICS and VIEW had tags.
};

/**
 * Whose an old code of several packages is, outside those packages: the first rule whose `file` (a path relative to
 * the root), `line` (the line's text, when given) and `codes` (when given) match.
 */
const SITES = [
  // `convert` and `record` print trace-format's output errors.
  { file: /^apps\/agent\/src\/commands\/output\.test\.ts$/, codes: ['ERR_OUTPUT'], owner: 'trace-format' },
  // asAgentError maps trace-format's ERR_OUTPUT to the agent's.
  { file: /^apps\/agent\/src\/daemon\/errors\.ts$/, line: /case 'ERR_OUTPUT'/, owner: 'trace-format' },
  // attachError maps PersistentError codes (its `case`s) to the agent's.
  { file: /^apps\/agent\/src\/daemon\/persistent\.ts$/, line: /case 'ERR_/, owner: 'persistent-events' },
  // `evtrace persistent` opens buffers itself: its errors are PersistentErrors.
  { file: /^apps\/agent\/src\/commands\/persistent(\.test)?\.ts$/, owner: 'persistent-events' },
  // A buffer listing's `unreadable` entries carry the PersistentError's code.
  {
    file: /^apps\/agent\/src\/daemon\/(caller|persistent)\.test\.ts$/,
    line: /unreadable|^\s*code: 'ERR_PERMISSION',$/,
    owner: 'persistent-events',
  },
  { file: /^packages\/agent-protocol\//, line: /persistent-events' error code/, owner: 'persistent-events' },
  // Anywhere else in the apps these are the agent's replies (the daemon's errors, the CLI printing them).
  { file: /^apps\//, codes: ['ERR_PERMISSION', 'ERR_OUTPUT', 'ERR_VERSION'], owner: 'agent-protocol' },
];

const SCANNED = ['packages', 'apps', 'tooling'];
const SKIPPED_DIRS = new Set(['node_modules', 'dist', '.turbo', '.bench', 'coverage', '.tooling']);
const EXTENSIONS = /\.(ts|tsx|mts|cts|mjs|md|json)$/;
/** The script itself, and changelogs, which tell what the codes were when they were written. */
const SKIPPED_FILES = /(^tooling\/scripts\/rename-error-codes\.mjs$|CHANGELOG\.md$)/;

/** Every old code and the packages that had it. */
const OWNERS = new Map();
for (const [pkg, map] of Object.entries(RENAMES))
  for (const old of Object.keys(map)) OWNERS.set(old, [...(OWNERS.get(old) ?? []), pkg]);

const NEW_NAMES = new Set(Object.values(RENAMES).flatMap((m) => Object.values(m)));
for (const name of NEW_NAMES)
  if (OWNERS.has(name)) throw new Error(`${name} is both an old and a new code: the rename would not be idempotent`);

const PATTERN = new RegExp(`(?<![A-Za-z0-9_])(${[...OWNERS.keys()].join('|')})(?![A-Za-z0-9_])`, 'g');

function files(dir, out = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRS.has(entry.name) && !entry.name.startsWith('.')) files(join(dir, entry.name), out);
    } else if (entry.isFile() && EXTENSIONS.test(entry.name)) out.push(join(dir, entry.name));
  }
  return out;
}

const dependencies = new Map();
/** The evtrace packages (directory names) a package depends on. */
function dependenciesOf(pkg) {
  if (!dependencies.has(pkg)) {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'packages', pkg, 'package.json'), 'utf8'));
    const names = Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies });
    dependencies.set(
      pkg,
      names.filter((n) => n.startsWith('@evtrace/')).map((n) => n.slice('@evtrace/'.length)),
    );
  }
  return dependencies.get(pkg);
}

/** Whose `code` is at this line of `path`: a package name, and how that was decided when the code had several. */
function ownerOf(code, path, text) {
  const owners = OWNERS.get(code);
  if (owners.length === 1) return { owner: owners[0] };
  const rule = SITES.find((s) => matches(s, code, path, text));
  if (rule !== undefined) return { owner: rule.owner, how: 'a rule' };
  const inPackage = /^packages\/([^/]+)\//.exec(path)?.[1];
  if (inPackage === undefined) return { owner: undefined };
  if (owners.includes(inPackage)) return { owner: inPackage };
  const deps = dependenciesOf(inPackage).filter((d) => owners.includes(d));
  return deps.length === 1 ? { owner: deps[0], how: `${inPackage}'s dependency` } : { owner: undefined };
}

function matches(rule, code, path, text) {
  return (
    rule.file.test(path) &&
    (rule.line === undefined || rule.line.test(text)) &&
    (rule.codes === undefined || rule.codes.includes(code))
  );
}

const check = process.argv.includes('--check');
const undecided = [];
const decided = [];
const changed = [];
const roots = [
  ...SCANNED.map((d) => join(ROOT, d)).flatMap((d) => files(d)),
  ...readdirSync(ROOT)
    .filter((f) => f.endsWith('.md') && statSync(join(ROOT, f)).isFile())
    .map((f) => join(ROOT, f)),
];
for (const file of roots) {
  const path = relative(ROOT, file);
  if (SKIPPED_FILES.test(path)) continue;
  const before = readFileSync(file, 'utf8');
  if (!PATTERN.test(before)) continue;
  PATTERN.lastIndex = 0;
  const lines = before.split('\n');
  const after = lines
    .map((text, i) =>
      text.replace(PATTERN, (code) => {
        const { owner, how } = ownerOf(code, path, text);
        if (owner === undefined) {
          undecided.push(`${path}:${i + 1}: ${code} is one of ${OWNERS.get(code).join(', ')}: ${text.trim()}`);
          return code;
        }
        const renamed = RENAMES[owner][code];
        if (how !== undefined) decided.push(`${path}:${i + 1}: ${code} -> ${renamed} (by ${how})`);
        return renamed;
      }),
    )
    .join('\n');
  if (after !== before) changed.push({ file, path, after });
}

if (undecided.length > 0) {
  console.error(`rename-error-codes: no rule says whose these codes are (add one to SITES):\n${undecided.join('\n')}`);
  process.exit(2);
}
if (check) {
  for (const c of changed) console.log(`old codes left: ${c.path}`);
  process.exit(changed.length > 0 ? 1 : 0);
}
for (const c of changed) {
  writeFileSync(c.file, c.after);
  console.log(`renamed: ${c.path}`);
}
if (decided.length > 0)
  console.log(`codes of several packages, and whose each was taken to be:\n${decided.join('\n')}`);
