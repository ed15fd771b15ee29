import { readdirSync, readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors.ts';
import { findTracefs } from '../testing/tracefs.ts';
import { parseFormatFile } from './format-file.ts';

const SCHED_SWITCH = `name: sched_switch
ID: 372
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;
\tfield:const void * ptr;\toffset:40;\tsize:8;\tsigned:0;
\tfield:__data_loc char[] name;\toffset:48;\tsize:4;\tsigned:0;
\tfield:__rel_loc u64[] addrs;\toffset:52;\tsize:4;\tsigned:0;
\tfield:u8 fsid[16];\toffset:56;\tsize:16;\tsigned:0;
\tfield:char buf[];\toffset:72;\tsize:0;\tsigned:0;

print fmt: "prev_comm=%s prev_pid=%d", REC->prev_comm, REC->prev_pid
`;

describe('parseFormatFile on literal texts', () => {
  const ev = parseFormatFile(SCHED_SWITCH, { file: '/t/events/sched/sched_switch/format' });

  it('reads name, ID, system from the path and print fmt', () => {
    expect(ev.name).toBe('sched:sched_switch');
    expect(ev.id).toBe(372);
    expect(ev.ftrace?.system).toBe('sched');
    expect(ev.ftrace?.event).toBe('sched_switch');
    expect(ev.printFormat).toBe('"prev_comm=%s prev_pid=%d", REC->prev_comm, REC->prev_pid');
  });

  it('keeps every field line with offset, size, signedness and C type, flagging common fields', () => {
    const f = ev.ftrace!.fields;
    expect(f.map((x) => x.name)).toEqual([
      'common_type',
      'common_flags',
      'common_preempt_count',
      'common_pid',
      'prev_comm',
      'prev_pid',
      'prev_state',
      'ptr',
      'name',
      'addrs',
      'fsid',
      'buf',
    ]);
    expect(f.filter((x) => x.common).length).toBe(4);
    expect(f[4]).toEqual({ name: 'prev_comm', cType: 'char[16]', offset: 8, size: 16, signed: false, common: false });
    expect(f[6]).toMatchObject({ cType: 'long', offset: 32, size: 8, signed: true });
    expect(f[7]).toMatchObject({ cType: 'const void *', size: 8 });
    expect(f[8]).toMatchObject({ cType: '__data_loc char[]', offset: 48, size: 4 });
    expect(f[9]).toMatchObject({ cType: '__rel_loc u64[]' });
    expect(f[11]).toMatchObject({ cType: 'char[]', size: 0 });
  });

  it('maps fields onto the model: common ones to context, the rest to the payload', () => {
    expect(ev.context?.members.map((m) => m.name)).toEqual([
      'common_type',
      'common_flags',
      'common_preempt_count',
      'common_pid',
    ]);
    const t = Object.fromEntries(ev.payload.members.map((m) => [m.name, m.type]));
    expect(t.prev_comm).toMatchObject({
      kind: 'array',
      length: 16,
      element: { kind: 'int', size: 8, encoding: 'utf8' },
    });
    expect(t.prev_pid).toMatchObject({ kind: 'int', size: 32, signed: true, base: 10, byteOrder: 'le' });
    expect(t.ptr).toMatchObject({ kind: 'int', size: 64, signed: false, base: 16 });
    expect(t.name).toMatchObject({ kind: 'dynamic', relative: false, isString: true });
    expect(t.addrs).toMatchObject({ kind: 'dynamic', relative: true, isString: false, element: { size: 64 } });
    expect(t.fsid).toMatchObject({ kind: 'array', length: 16, element: { size: 8, encoding: 'none' } });
    expect(t.buf).toEqual({ kind: 'string', encoding: 'utf8' });
  });

  it('honours the system option, byte order and long size', () => {
    const be = parseFormatFile(SCHED_SWITCH, { system: 'x', byteOrder: 'be', longSize: 4 });
    expect(be.name).toBe('x:sched_switch');
    const addrs = be.payload.members.find((m) => m.name === 'addrs')!.type;
    expect(addrs).toMatchObject({ element: { byteOrder: 'be', size: 64 } });
  });

  it('rejects malformed input with file, line and column', () => {
    const bad = SCHED_SWITCH.replace('offset:24;', 'offset:x;');
    expect(() => parseFormatFile(bad, { file: 'f' })).toThrow(/^f:10:1: malformed field line/);
    const err = (() => {
      try {
        parseFormatFile('name: a\nID: 1\nformat:\n\tfield:__data_loc char[] s;\toffset:8;\tsize:8;\tsigned:0;\n');
      } catch (e) {
        return e as TraceFormatError;
      }
    })();
    expect(err).toBeInstanceOf(TraceFormatError);
    expect(err?.code).toBe('ERR_TRACE_FTRACE_FORMAT');
    expect(err?.location.line).toBe(4);
    expect(() => parseFormatFile('ID: 3\nformat:\n')).toThrow(/missing "name:"/);
    expect(() => parseFormatFile('name: a\nformat:\n')).toThrow(/missing "ID:"/);
    expect(() => parseFormatFile('name: a\nID: 1\nbogus\n')).toThrow(/3:1: unexpected line/);
  });

  it('never throws anything but TraceFormatError on mutated texts', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(SCHED_SWITCH.length), fc.nat(40), fc.string({ maxLength: 8 })), { maxLength: 6 }),
        (edits) => {
          let text = SCHED_SWITCH;
          for (const [pos, del, ins] of edits) text = text.slice(0, pos) + ins + text.slice(pos + del);
          try {
            const ev = parseFormatFile(text);
            expect(typeof ev.id).toBe('number');
          } catch (e) {
            expect(e).toBeInstanceOf(TraceFormatError);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

const tracefs = findTracefs();
describe.skipIf(!('path' in tracefs))(
  `parseFormatFile on this kernel's tracefs${'why' in tracefs ? ` (skipped: ${tracefs.why})` : ''}`,
  () => {
    const root = 'path' in tracefs ? tracefs.path : '';
    const read = (rel: string) => readFileSync(`${root}/events/${rel}/format`, 'utf8');

    it('parses kmem:kmalloc with its %pS print format', () => {
      const ev = parseFormatFile(read('kmem/kmalloc'), { file: `${root}/events/kmem/kmalloc/format` });
      expect(ev.name).toBe('kmem:kmalloc');
      expect(ev.id).toBe(Number(readFileSync(`${root}/events/kmem/kmalloc/id`, 'utf8')));
      const byName = Object.fromEntries(ev.ftrace!.fields.map((f) => [f.name, f]));
      expect(byName.call_site).toMatchObject({ cType: 'unsigned long', size: 8, signed: false, offset: 8 });
      expect(byName.ptr?.cType).toBe('const void *');
      expect(ev.printFormat).toMatch(/^"call_site=%pS ptr=%p/);
    });

    it('parses sched:sched_switch with char arrays', () => {
      const ev = parseFormatFile(read('sched/sched_switch'), { system: 'sched' });
      expect(ev.payload.members.find((m) => m.name === 'next_comm')?.type).toMatchObject({ kind: 'array', length: 16 });
    });

    it('parses every event format file of the kernel, and their sizes agree with the offsets', () => {
      let count = 0;
      let dynamic = 0;
      for (const system of readdirSync(`${root}/events`, { withFileTypes: true })) {
        if (!system.isDirectory()) continue;
        for (const event of readdirSync(`${root}/events/${system.name}`, { withFileTypes: true })) {
          if (!event.isDirectory()) continue;
          const file = `${root}/events/${system.name}/${event.name}/format`;
          let text: string;
          try {
            text = readFileSync(file, 'utf8');
          } catch {
            continue; // some formats are unreadable (e.g. events without a format)
          }
          const ev = parseFormatFile(text, { file });
          expect(ev.name).toBe(`${system.name}:${event.name}`);
          for (const f of ev.ftrace!.fields) {
            if (f.cType.startsWith('__data_loc') || f.cType.startsWith('__rel_loc')) dynamic++;
          }
          count++;
        }
      }
      expect(count).toBeGreaterThan(500);
      expect(dynamic).toBeGreaterThan(10);
    });
  },
);
