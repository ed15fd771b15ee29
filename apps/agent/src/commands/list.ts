import { type EventName, findTracefs, listEvents, matchEvents, readEventFormat, TracefsError } from '@evtrace/tracefs';
import type { Command } from 'commander';
import { addCommand, type CliIO } from '../command.ts';
import { CliExit, ExitCode } from '../exit-codes.ts';
import { setExamples } from '../help.ts';

interface ListOptions {
  fields?: boolean;
  json?: boolean;
}

interface FieldRow {
  name: string;
  type: string;
  offset: number;
  size: number;
  signed: boolean;
}

function fieldsOf(tracefs: string, e: EventName): { id: number; fields: FieldRow[] } {
  const { eventClass } = readEventFormat(tracefs, e);
  const fields = (eventClass.ftrace?.fields ?? [])
    .filter((f) => !f.common)
    .map((f) => ({ name: f.name, type: f.cType, offset: f.offset, size: f.size, signed: f.signed }));
  return { id: eventClass.id, fields };
}

/** The C declaration as format files write it: `char prev_comm[16]`, `__data_loc char[] name`. */
function declaration(f: FieldRow): string {
  const array = /^(.*[^\]])\[(\d*)\]$/.exec(f.type);
  return array !== null && !f.type.startsWith('__data_loc')
    ? `${array[1]} ${f.name}[${array[2]}]`
    : `${f.type} ${f.name}`;
}

/** `evtrace list [GLOB] [--fields] [--json]`. */
export function registerList(program: Command, io: CliIO): void {
  const cmd = addCommand(program, 'list')
    .summary('list the kernel trace events (tracepoints) and their fields')
    .description(
      `Prints the tracefs event catalogue, one system:event per line, optionally only those matching GLOB
(system:event, either part a glob, or a bare system). --fields adds each event's fields (type, offset, size) as
its format file declares them; --json prints one JSON array.`,
    )
    .argument('[glob]', "events to list, e.g. 'sched:*' or kmem")
    .option('--fields', "print each event's fields")
    .option('--json', 'print a JSON array of {system, event[, id, fields]}')
    .action((glob: string | undefined, options: ListOptions) => {
      let tracefs: string;
      let events: EventName[];
      try {
        tracefs = findTracefs();
        const all = listEvents(tracefs);
        events = glob === undefined ? all : matchEvents(all, [glob]);
      } catch (error) {
        // A glob that lists nothing is an answer about this kernel, not a command-line mistake as `record -e` makes.
        if (error instanceof TracefsError) throw new CliExit(error.code, error.message, ExitCode.Failure);
        throw error;
      }
      if (options.json) {
        const rows = events.map((e) => (options.fields ? { ...e, ...fieldsOf(tracefs, e) } : { ...e }));
        io.stdout(`${JSON.stringify(rows, null, 2)}\n`);
        return;
      }
      const out: string[] = [];
      for (const e of events) {
        out.push(`${e.system}:${e.event}`);
        if (!options.fields) continue;
        for (const f of fieldsOf(tracefs, e).fields) {
          out.push(
            `    ${`${declaration(f)};`.padEnd(44)} offset:${f.offset} size:${f.size} signed:${f.signed ? 1 : 0}`,
          );
        }
      }
      io.stdout(out.length > 0 ? `${out.join('\n')}\n` : '');
    });
  setExamples(
    cmd,
    `evtrace list                        every event
evtrace list 'sched:*' --fields     the sched events with their fields
evtrace list kmem:kmalloc --json --fields`,
  );
}
