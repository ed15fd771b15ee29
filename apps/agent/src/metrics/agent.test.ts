/**
 * The real agent (`evtrace agent --config FILE`, a child process on a real socket) with its metrics endpoint on,
 * scraped by a real Prometheus: the config file's session boots, its counters reach Prometheus equal to what
 * `session status` says, sessions created over the socket appear, and the endpoint closes with the agent.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentClient, SessionStatus } from '@evtrace/agent-protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pkg from '../../package.json' with { type: 'json' };
import { eventually, type RunningAgent, startAgent, workDir } from '../testing/agent-daemon.ts';
import {
  freePort,
  type Prometheus,
  type PromSample,
  prometheusMissing,
  startPrometheus,
} from '../testing/prometheus.ts';

const missing = prometheusMissing();

describe.skipIf(missing !== undefined)(
  `the agent scraped by Prometheus${missing ? ` (skipped: ${missing})` : ''}`,
  () => {
    let dir: string;
    let port: number;
    let agent: RunningAgent;
    let client: AgentClient;
    let prometheus: Prometheus;

    beforeAll(async () => {
      dir = workDir('agent-metrics-');
      port = await freePort();
      const config = join(dir, 'agent.toml');
      writeFileSync(
        config,
        `metrics = "127.0.0.1:${port}"\n\n[sessions.boot]\nevents = ["kmem:kmalloc", "kmem:kfree"]\nmode = "overwrite"\nbuffer_size = "64KiB"\nsource = "demo"\n`,
      );
      agent = await startAgent(dir, ['--config', config, '--demo-rate', '3000']);
      client = await agent.connect();
      prometheus = await startPrometheus([`127.0.0.1:${port}`]);
    }, 60_000);

    afterAll(async () => {
      client?.close();
      await prometheus?.stop();
      if (agent?.proc.exitCode === null) await agent.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    const byCpu = (samples: PromSample[]) => new Map(samples.map((s) => [Number(s.metric.cpu), s.value] as const));

    it('boots the config file session and exports per-CPU events, lost events and bytes equal to its status', async () => {
      await agent.waitForLog(/session boot \(from the config file\): created and started/);
      expect(agent.log()).toContain(`metrics at http://127.0.0.1:${port}/metrics`);
      // Let it record (and, with 64 KiB per CPU in overwrite mode, overwrite), then freeze the counters.
      await eventually(async () => ((await client.status('boot')).events > 3000 ? true : undefined), 30_000);
      await client.stop('boot');
      // Prometheus and the agent agree once a scrape after the stop is stored; compare against a fresh status each time.
      const agreed = await eventually(async () => {
        const status: SessionStatus = await client.status('boot');
        for (const [metric, field] of [
          ['evtrace_events_total', 'events'],
          ['evtrace_lost_events_total', 'lost'],
          ['evtrace_bytes_total', 'bytes'],
        ] as const) {
          const got = byCpu(await prometheus.query(`${metric}{job="evtrace",session="boot",source="demo"}`));
          if (got.size !== status.cpus.length || status.cpus.some((c) => got.get(c.cpu) !== c[field])) return undefined;
        }
        return status;
      }, 20_000);
      expect(agreed.cpus.length).toBeGreaterThan(0);
      expect(agreed.events).toBeGreaterThan(3000);
      const total = await prometheus.query('sum(evtrace_events_total{session="boot"})');
      expect(total[0]?.value).toBe(agreed.events);
      const bytes = await prometheus.query('sum(evtrace_bytes_total{session="boot"})');
      expect(bytes[0]?.value).toBe(agreed.bytes);
      const state = await prometheus.waitFor(
        'evtrace_session_state{session="boot"} == 1',
        (s) => s[0]?.metric.state === 'stopped',
      );
      expect(state.map((s) => [s.metric.state, s.metric.mode])).toEqual([['stopped', 'overwrite']]);
    });

    it('shows a session created over the socket and the agent health', async () => {
      await client.createSession({
        name: 'live',
        events: ['sched:*'],
        mode: 'discard',
        source: 'demo',
        bufferSize: 65536,
      });
      await client.start('live');
      await prometheus.waitFor('evtrace_session_state{session="live",state="running"}', (s) => s[0]?.value === 1);
      await prometheus.waitFor('evtrace_agent_sessions', (s) => s[0]?.value === 2);
      const events = await prometheus.waitFor(
        'sum(evtrace_events_total{session="live"})',
        (s) => (s[0]?.value ?? 0) > 0,
      );
      expect(events[0]!.value).toBeLessThanOrEqual((await client.status('live')).events);
      // The process itself is described once, by prom-client's process_* metrics.
      const started = (await prometheus.query('process_start_time_seconds{job="evtrace"}'))[0]!.value;
      expect(Math.abs(started * 1000 - Date.now())).toBeLessThan(120_000);
      const rss = (await prometheus.query('process_resident_memory_bytes{job="evtrace"}'))[0]!.value;
      expect(rss).toBeGreaterThan(10 << 20);
      expect(await prometheus.query('{job="evtrace",__name__=~"evtrace_agent_(start_time|resident|cpu).*"}')).toEqual(
        [],
      );
      const build = await prometheus.query('evtrace_build_info{job="evtrace"}');
      expect(build.map((s) => [s.metric.version, s.metric.node, s.value])).toEqual([
        [pkg.version, process.versions.node, 1],
      ]);
    });

    it('closes the endpoint when the agent stops', async () => {
      client.close();
      expect(await agent.stop()).toBe(0);
      await expect(fetch(`http://127.0.0.1:${port}/metrics`)).rejects.toThrow();
      await prometheus.waitFor('up{job="evtrace"}', (s) => s[0]?.value === 0);
    });
  },
);
