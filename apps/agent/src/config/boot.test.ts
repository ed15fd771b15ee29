import { describe, expect, it } from 'vitest';
import { type BootSessionSpec, bootSessions, sessionSpecOf } from './boot.ts';
import { parseConfigFile, resolveAgentConfig } from './load.ts';

/** An agent keeping sessions in a map, refusing kernel sources (as one without tracefs does). */
class MapAgent {
  readonly sessions = new Map<string, { spec: BootSessionSpec; running: boolean }>();
  has(name: string) {
    return this.sessions.has(name);
  }
  async create(spec: BootSessionSpec) {
    if (spec.source === 'kernel')
      throw Object.assign(new Error('tracefs is not mounted'), { code: 'ERR_TRACEFS_NOT_FOUND' });
    this.sessions.set(spec.name, { spec, running: false });
  }
  start(name: string) {
    this.sessions.get(name)!.running = true;
  }
}

const config = resolveAgentConfig({
  config: parseConfigFile(
    [
      '[sessions.kept]',
      'events = ["sched:*"]',
      '[sessions.flight]',
      'events = ["sched:sched_switch"]',
      'mode = "overwrite"',
      'output = "/out"',
      'rotate = "1h"',
      '[sessions.idle]',
      'events = ["kmem:*"]',
      'start = false',
      '[sessions.kernel]',
      'events = ["kmem:*"]',
      'source = "kernel"',
    ].join('\n'),
    '/etc/evtrace/agent.toml',
  ),
});

describe('booting the config sessions', () => {
  it('turns a session table into a create request without the start flag', () => {
    const flight = config.sessions.find((s) => s.name === 'flight')!;
    expect(sessionSpecOf(flight)).toEqual({
      name: 'flight',
      events: ['sched:sched_switch'],
      mode: 'overwrite',
      bufferSize: 4 << 20,
      output: { dir: '/out', format: 'tracedat' },
      rotate: { seconds: 3600 },
      source: 'auto',
    });
  });

  it('creates and starts in order, keeps recovered sessions, and reports a failure without stopping', async () => {
    const agent = new MapAgent();
    agent.sessions.set('kept', { spec: sessionSpecOf(config.sessions[0]!), running: false });
    const said = await bootSessions(config.sessions, agent);
    expect(said).toEqual([
      'session kept (from the config file): kept as recovered',
      'session flight (from the config file): created and started',
      'session idle (from the config file): created',
      'session kernel (from the config file): not created: ERR_TRACEFS_NOT_FOUND: tracefs is not mounted',
    ]);
    expect([...agent.sessions].map(([name, s]) => [name, s.running])).toEqual([
      ['kept', false],
      ['flight', true],
      ['idle', false],
    ]);
  });
});
