import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const PACKAGE_DIR = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Loads the built package in a fresh Node, as users do, with a resolve hook that notes every specifier; `body` runs
 * with `tracefs` and `format` (a kmem:kmalloc event class) in scope. Returns what it printed and whether
 * @evtrace/filters was resolved.
 */
function run(body: string): { printed: unknown; loadedFilters: boolean } {
  const script = `
    import { registerHooks } from 'node:module';
    const seen = new Set();
    registerHooks({ resolve(specifier, context, next) { seen.add(specifier); return next(specifier, context); } });
    const tracefs = await import('@evtrace/tracefs');
    const { parseFormatFile } = await import('@evtrace/trace-format');
    const format = parseFormatFile(
      'name: kmalloc\\nID: 658\\nformat:\\n\\tfield:unsigned short common_type;\\toffset:0;\\tsize:2;\\tsigned:0;\\n' +
        '\\tfield:int common_pid;\\toffset:4;\\tsize:4;\\tsigned:1;\\n\\n\\tfield:size_t bytes_req;\\toffset:8;\\tsize:8;\\tsigned:0;\\n\\n' +
        'print fmt: "%zu", REC->bytes_req\\n',
      { system: 'kmem' },
    );
    const printed = await (async () => { ${body} })();
    process.stdout.write(JSON.stringify({ printed, loadedFilters: seen.has('@evtrace/filters') }));
  `;
  // Self-reference: run from the package directory, '@evtrace/tracefs' resolves to its own built exports.
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: PACKAGE_DIR });
  return JSON.parse(out.toString());
}

describe('@evtrace/filters is loaded on first use', () => {
  it('is not loaded by a recording plan without a filter', () => {
    const r = run('return tracefs.planEventFilters([format], {}).size;');
    expect(r).toEqual({ printed: 0, loadedFilters: false });
  });

  it('is loaded by a filter, which is then parsed and planned as before', () => {
    const r = run(`
      const plan = tracefs.planEventFilters([format], { filter: 'bytes_req > 256' }).get('kmem:kmalloc');
      return [plan.parsed.expression, plan.kernel];
    `);
    expect(r).toEqual({ printed: ['bytes_req > 256', 'bytes_req > 256'], loadedFilters: true });
  });

  it('still turns the filter language errors into ERR_TRACEFS_FILTER', () => {
    const r = run(`
      try { tracefs.planEventFilters([format], { filter: 'bytes_req > > 1' }); return 'accepted'; }
      catch (error) { return [error.code, error.message.split('\\n')[0]]; }
    `);
    expect(r).toEqual({
      printed: ['ERR_TRACEFS_FILTER', 'invalid filter for kmem:kmalloc at column 14:'],
      loadedFilters: true,
    });
  });
});
