import { describe, expect, it } from 'vitest';
import { parseRequest, parseServerMessage } from './validate.ts';

describe('parseRequest', () => {
  it('reads a full create request', () => {
    const r = parseRequest(
      JSON.stringify({
        id: 7,
        op: 'create',
        session: {
          name: 'flight-1',
          events: ['kmem:kmalloc', 'sched:*'],
          filter: 'bytes_req > 64',
          mode: 'overwrite',
          bufferSize: 1 << 20,
          output: { dir: '/var/lib/x', format: 'ctf' },
          rotate: { bytes: 1 << 24 },
          source: 'demo',
          triggers: [
            { kind: 'event', filter: 'bytes_req > 4000' },
            { kind: 'signal', signal: 'SIGUSR1' },
          ],
        },
      }),
    );
    expect(r.ok).toBe(true);
    if (r.ok && r.value.op === 'create') {
      expect(r.value.session.rotate).toEqual({ bytes: 1 << 24 });
      expect(r.value.session.triggers).toHaveLength(2);
    }
  });

  it('reads a branch session with its program', () => {
    const r = parseRequest(
      JSON.stringify({
        id: 1,
        op: 'create',
        session: {
          name: 'b',
          events: ['bts:branch'],
          mode: 'overwrite',
          source: 'bts-qemu',
          command: ['./prog', '-v'],
        },
      }),
    );
    expect(r.ok && r.value.op === 'create' && r.value.session).toMatchObject({
      source: 'bts-qemu',
      command: ['./prog', '-v'],
    });
  });

  it.each([
    ['{', 'ERR_AGENT_BAD_MESSAGE', null, /not JSON/],
    ['[1]', 'ERR_AGENT_BAD_MESSAGE', null, /JSON object/],
    ['{"op":"list"}', 'ERR_AGENT_BAD_MESSAGE', null, /id/],
    ['{"id":-1,"op":"list"}', 'ERR_AGENT_BAD_MESSAGE', null, /id/],
    ['{"id":3,"op":"explode"}', 'ERR_AGENT_UNKNOWN_OP', 3, /unknown op 'explode'/],
    ['{"id":4,"op":"start","name":"../etc"}', 'ERR_AGENT_BAD_MESSAGE', 4, /request\.name/],
    [
      '{"id":5,"op":"create","session":{"name":"a","events":[],"mode":"overwrite"}}',
      'ERR_AGENT_BAD_MESSAGE',
      5,
      /session\.events/,
    ],
    [
      '{"id":6,"op":"create","session":{"name":"a","events":["x:y"],"mode":"ring"}}',
      'ERR_AGENT_BAD_MESSAGE',
      6,
      /session\.mode/,
    ],
    [
      '{"id":8,"op":"create","session":{"name":"a","events":["x:y"],"mode":"discard","rotate":{"bytes":10}}}',
      'ERR_AGENT_BAD_MESSAGE',
      8,
      /needs output/,
    ],
    ['{"id":9,"op":"subscribe","name":"a","queue":0}', 'ERR_AGENT_BAD_MESSAGE', 9, /queue/],
    [
      '{"id":30,"op":"create","session":{"name":"a","events":["x:y"],"mode":"discard","filter":"pid > 1\\u0000|| pid == 0"}}',
      'ERR_AGENT_BAD_MESSAGE',
      30,
      /^session\.filter: NUL character at column 7 \(the kernel would apply only the text before it\)$/,
    ],
    [
      '{"id":31,"op":"trigger","name":"a","trigger":{"kind":"event","filter":"comm == \\"\u00e9\\u0000\\""}}',
      'ERR_AGENT_BAD_MESSAGE',
      31,
      /^trigger\.filter: NUL character at column 11 /,
    ],
    [
      '{"id":32,"op":"create","session":{"name":"a","events":["x:y"],"mode":"discard","triggers":[{"kind":"event","filter":"\\u0000"}]}}',
      'ERR_AGENT_BAD_MESSAGE',
      32,
      /^session\.triggers\[0\]\.filter: NUL character at column 0 /,
    ],
    [
      '{"id":10,"op":"trigger","name":"a","trigger":{"kind":"signal","signal":"SIGKILL"}}',
      'ERR_AGENT_BAD_MESSAGE',
      10,
      /signal/,
    ],
    ['{"id":11,"op":"hello","version":"1"}', 'ERR_AGENT_BAD_MESSAGE', 11, /version/],
    ['{"id":12,"op":"attach","buffer":"../etc/passwd"}', 'ERR_AGENT_BAD_MESSAGE', 12, /request\.buffer/],
    ['{"id":13,"op":"attach","buffer":"a//b"}', 'ERR_AGENT_BAD_MESSAGE', 13, /request\.buffer/],
    [`{"id":14,"op":"attach","buffer":"${'a/'.repeat(100)}a"}`, 'ERR_AGENT_BAD_MESSAGE', 14, /request\.buffer/],
    ['{"id":15,"op":"attach","buffer":"a/b","backend":"disk"}', 'ERR_AGENT_BAD_MESSAGE', 15, /request\.backend/],
    ['{"id":16,"op":"attach","buffer":"a/b","name":"x/y"}', 'ERR_AGENT_BAD_MESSAGE', 16, /request\.name/],
    ['{"id":17,"op":"attach"}', 'ERR_AGENT_BAD_MESSAGE', 17, /request\.buffer: missing/],
    ['{"id":18,"op":"detach","name":"a/b"}', 'ERR_AGENT_BAD_MESSAGE', 18, /request\.name/],
    ['{"id":19,"op":"buffers","dir":7}', 'ERR_AGENT_BAD_MESSAGE', 19, /request\.dir/],
    [
      '{"id":20,"op":"create","session":{"name":"a","events":["bts:branch"],"mode":"discard","source":"bts-qemu","command":"./prog"}}',
      'ERR_AGENT_BAD_MESSAGE',
      20,
      /session\.command: must be an array of 1 to 256 strings/,
    ],
    [
      '{"id":21,"op":"create","session":{"name":"a","events":["bts:branch"],"mode":"discard","source":"bts","command":[""]}}',
      'ERR_AGENT_BAD_MESSAGE',
      21,
      /session\.command: must name a program/,
    ],
  ])('rejects %s with %s', (line, code, id, message) => {
    const r = parseRequest(line);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.code).toBe(code);
      expect(r.id).toBe(id);
      expect(r.message).toMatch(message);
    }
  });

  it('reads the persistent-buffer ops of version 2', () => {
    expect(parseRequest('{"id":1,"op":"buffers"}')).toEqual({ ok: true, value: { id: 1, op: 'buffers' } });
    expect(parseRequest('{"id":2,"op":"buffers","dir":"/dev/shm/x"}')).toEqual({
      ok: true,
      value: { id: 2, op: 'buffers', dir: '/dev/shm/x' },
    });
    expect(
      parseRequest('{"id":3,"op":"attach","buffer":"team/app/flight","backend":"kernel","name":"f","dir":"/d"}'),
    ).toEqual({
      ok: true,
      value: { id: 3, op: 'attach', buffer: 'team/app/flight', backend: 'kernel', name: 'f', dir: '/d' },
    });
    expect(parseRequest('{"id":4,"op":"attach","buffer":"flight"}')).toEqual({
      ok: true,
      value: { id: 4, op: 'attach', buffer: 'flight' },
    });
    expect(parseRequest('{"id":5,"op":"detach","name":"team.app.flight"}')).toEqual({
      ok: true,
      value: { id: 5, op: 'detach', name: 'team.app.flight' },
    });
  });

  it('ignores __proto__ keys instead of polluting prototypes', () => {
    const r = parseRequest('{"id":1,"op":"list","__proto__":{"polluted":true}}');
    expect(r.ok).toBe(true);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });
});

describe('parseServerMessage', () => {
  it('reads replies, error replies and stream messages', () => {
    expect(parseServerMessage('{"id":1,"ok":true,"result":{"stream":3}}')).toEqual({
      ok: true,
      value: { id: 1, ok: true, result: { stream: 3 } },
    });
    const err = parseServerMessage('{"id":null,"ok":false,"error":{"code":"ERR_AGENT_TOO_LARGE","message":"big"}}');
    expect(err.ok && !('stream' in err.value) && !err.value.ok && err.value.error.code).toBe('ERR_AGENT_TOO_LARGE');
    const ev = parseServerMessage(
      '{"stream":3,"kind":"events","events":[{"ts_ns":"12","cpu":0,"event":"kmem:kfree","pid":null,"comm":null,"flags":null,"fields":{"ptr":"0x1"}}]}',
    );
    expect(ev.ok).toBe(true);
    // pid, comm and flags are always present (null when the source records none).
    const bare = parseServerMessage(
      '{"stream":3,"kind":"events","events":[{"ts_ns":"12","cpu":0,"event":"kmem:kfree","fields":{"ptr":"0x1"}}]}',
    );
    expect(bare.ok).toBe(false);
    const task = parseServerMessage(
      '{"stream":3,"kind":"events","events":[{"ts_ns":"12","cpu":0,"event":"kmem:kfree","pid":41,"comm":"sh","flags":null,"fields":{}}]}',
    );
    expect(task.ok && 'stream' in task.value && task.value.kind === 'events' && task.value.events[0]).toMatchObject({
      pid: 41,
      comm: 'sh',
    });
    for (const bad of [
      '"pid":"41","comm":null,"flags":null',
      '"pid":4.5,"comm":null,"flags":null',
      '"pid":1,"comm":7,"flags":null',
      '"pid":1,"comm":"a","flags":3',
    ])
      expect(
        parseServerMessage(
          `{"stream":3,"kind":"events","events":[{"ts_ns":"12","cpu":0,"event":"a:b",${bad},"fields":{}}]}`,
        ).ok,
        bad,
      ).toBe(false);
    expect(parseServerMessage('{"stream":3,"kind":"loss","lost":5,"total":9}')).toEqual({
      ok: true,
      value: { stream: 3, kind: 'loss', lost: 5, total: 9 },
    });
  });

  it('maps an error code it does not know to ERR_AGENT_INTERNAL and rejects malformed stream messages', () => {
    const r = parseServerMessage('{"id":2,"ok":false,"error":{"code":"ERR_FUTURE","message":"m"}}');
    expect(r.ok && !('stream' in r.value) && !r.value.ok && r.value.error.code).toBe('ERR_AGENT_INTERNAL');
    expect(parseServerMessage('{"stream":1,"kind":"events","events":[{"cpu":0}]}').ok).toBe(false);
    expect(parseServerMessage('{"stream":1,"kind":"teleport"}').ok).toBe(false);
    expect(parseServerMessage('{"hello":1}').ok).toBe(false);
  });

  it("reads an older agent's codes, which had no ERR_AGENT_ tag, as the tagged ones", () => {
    const code = (sent: string) => {
      const r = parseServerMessage(JSON.stringify({ id: 1, ok: false, error: { code: sent, message: 'm' } }));
      return r.ok && !('stream' in r.value) && !r.value.ok ? r.value.error.code : undefined;
    };
    // Written in pieces: tooling/scripts/rename-error-codes.mjs would rename the whole old codes.
    expect(code(['ERR', 'VERSION'].join('_'))).toBe('ERR_AGENT_VERSION');
    expect(code(['ERR', 'NO_SESSION'].join('_'))).toBe('ERR_AGENT_NO_SESSION');
    expect(code('ERR_AGENT_LIMIT')).toBe('ERR_AGENT_LIMIT');
    expect(code('ERR_CONNECT')).toBe('ERR_AGENT_INTERNAL');
    expect(code('ERR_AGENT_CONNECT')).toBe('ERR_AGENT_INTERNAL');
  });
});
