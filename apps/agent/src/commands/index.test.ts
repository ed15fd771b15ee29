import { describe, expect, it } from 'vitest';
import { runCli } from '../program.ts';
import { commandsFor } from './index.ts';

const ALL = [
  'agent',
  'bts',
  'cat',
  'completion',
  'convert',
  'demo',
  'filter',
  'fleet',
  'kmem',
  'list',
  'ls',
  'mce',
  'persistent',
  'record',
  'session',
];

describe('commandsFor', () => {
  it('loads only the verb a command line starts with, none for --version, all for help and unknown verbs', () => {
    expect(commandsFor(['record', '-e', 'kmem:kmalloc', '-o', 'x.dat'])).toEqual(['record']);
    expect(commandsFor(['cat', '--help'])).toEqual(['cat']);
    expect(commandsFor(['--version'])).toEqual([]);
    expect(commandsFor(['-V'])).toEqual([]);
    expect([...commandsFor([])].sort()).toEqual(ALL);
    expect([...commandsFor(['--help'])].sort()).toEqual(ALL);
    expect([...commandsFor(['help', 'record'])].sort()).toEqual(ALL);
    expect([...commandsFor(['recrod'])].sort()).toEqual(ALL);
    expect([...commandsFor(['toString'])].sort()).toEqual(ALL);
  });

  it('still lists every verb in the help and suggests one for a typo', async () => {
    let out = '';
    let err = '';
    const io = { stdout: (t: string) => (out += t), stderr: (t: string) => (err += t) };
    await runCli(['--help'], io);
    for (const verb of ALL) expect(out).toMatch(new RegExp(`^\\s+${verb}\\b`, 'm'));
    await runCli(['recrod'], io);
    expect(err).toMatch(/Did you mean record\?/);
  });
});
