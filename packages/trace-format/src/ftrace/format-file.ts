import { TraceFormatError } from '../errors.ts';
import type {
  ByteOrder,
  EventClass,
  FieldClass,
  FtraceFieldInfo,
  IntegerClass,
  StructClass,
  StructMember,
} from '../model/types.ts';
import { isCharType, type ParsedDeclaration, parseDeclaration, sizeOfType } from './c-types.ts';

/** Options of {@link parseFormatFile}. */
export interface FormatFileOptions {
  /** Path or label of the file, used in error messages and to infer the system from `events/SYSTEM/EVENT/format`. */
  readonly file?: string;
  /** The event's system (`sched` for `sched_switch`). Default: from `file`'s path, else none. */
  readonly system?: string;
  /** Byte order of the recording kernel. Default `le`. */
  readonly byteOrder?: ByteOrder;
  /** Size of `long` and pointers on the recording kernel, in bytes. Default 8. */
  readonly longSize?: number;
}

/** One `field:` line with its declaration split into parts. */
export interface FieldLine extends FtraceFieldInfo {
  readonly decl: ParsedDeclaration;
}

const FIELD_LINE = /^\s*field:\s*(.*?);\s*offset:\s*(\d+);\s*size:\s*(\d+);(?:\s*signed:\s*(-?\d+);)?\s*$/;

/** Parses one `field:DECL;\toffset:N;\tsize:N;\tsigned:N;` line; `lineNo`/`file` locate errors. */
export function parseFieldLine(line: string, lineNo: number, file: string | undefined): FieldLine {
  const m = FIELD_LINE.exec(line);
  if (m === null) {
    throw new TraceFormatError('ERR_TRACE_FTRACE_FORMAT', `malformed field line: ${JSON.stringify(line.trim())}`, {
      file,
      line: lineNo,
      column: 1,
    });
  }
  const decl = parseDeclaration(m[1]!);
  if (decl === undefined) {
    throw new TraceFormatError('ERR_TRACE_FTRACE_FORMAT', `field declaration has no name: ${JSON.stringify(m[1])}`, {
      file,
      line: lineNo,
      column: line.indexOf('field:') + 7,
    });
  }
  const offset = Number(m[2]);
  const size = Number(m[3]);
  // Very old kernels omit `signed:`; infer it from the type then.
  const signed =
    m[4] !== undefined ? m[4] !== '0' : /^(int|short|long|long long|s\d+|__s\d+|int\d+_t|char)$/.test(decl.baseType);
  return { name: decl.name, cType: decl.cType, offset, size, signed, common: decl.name.startsWith('common_'), decl };
}

/**
 * Parses a tracefs event `format` file (`events/SYSTEM/EVENT/format`, or a trace.dat copy of one) into an event
 * class. Every `field:` line becomes an {@link FtraceFieldInfo} in `ftrace.fields`; the non-`common_*` fields are
 * mapped onto the payload structure and the `common_*` ones onto `context`. `print fmt` is kept verbatim.
 *
 * @throws TraceFormatError `ERR_TRACE_FTRACE_FORMAT` with the line and column of the first problem.
 */
export function parseFormatFile(text: string, options: FormatFileOptions = {}): EventClass {
  const file = options.file;
  const byteOrder = options.byteOrder ?? 'le';
  const longSize = options.longSize ?? 8;
  let name: string | undefined;
  let id: number | undefined;
  let printFormat: string | undefined;
  const fields: FieldLine[] = [];
  const lines = text.split('\n');
  const at = (lineNo: number, column = 1) => ({ file, line: lineNo, column });
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const lineNo = i + 1;
    if (line.trim() === '' || line.trim() === 'format:') continue;
    if (/^\s*field\b/.test(line)) {
      const f = parseFieldLine(line, lineNo, file);
      checkField(f, at(lineNo));
      if (fields.some((g) => g.name === f.name)) {
        throw new TraceFormatError('ERR_TRACE_FTRACE_FORMAT', `duplicate field ${f.name}`, at(lineNo));
      }
      fields.push(f);
    } else if (line.startsWith('name:')) {
      name = line.slice(5).trim();
      if (!/^[\w.$-]+$/.test(name))
        throw new TraceFormatError('ERR_TRACE_FTRACE_FORMAT', 'bad event name', at(lineNo, 6));
    } else if (line.startsWith('ID:')) {
      const idText = line.slice(3).trim();
      if (!/^\d{1,9}$/.test(idText))
        throw new TraceFormatError('ERR_TRACE_FTRACE_FORMAT', 'bad event ID', at(lineNo, 4));
      id = Number(idText);
    } else if (line.startsWith('print fmt:')) {
      // The rest of the file is the print format (it is one line today, but nothing forbids more).
      printFormat = lines.slice(i).join('\n').slice('print fmt:'.length).trim();
      break;
    } else {
      throw new TraceFormatError(
        'ERR_TRACE_FTRACE_FORMAT',
        `unexpected line: ${JSON.stringify(line.slice(0, 60))}`,
        at(lineNo),
      );
    }
  }
  if (name === undefined) throw new TraceFormatError('ERR_TRACE_FTRACE_FORMAT', 'missing "name:" line', { file });
  if (id === undefined) throw new TraceFormatError('ERR_TRACE_FTRACE_FORMAT', 'missing "ID:" line', { file });
  const system = options.system ?? systemFromPath(file) ?? '';
  const ftraceFields: FtraceFieldInfo[] = fields.map(({ decl: _decl, ...info }) => info);
  const common = fields.filter((f) => f.common);
  const own = fields.filter((f) => !f.common);
  const toMember = (f: FieldLine): StructMember => ({ name: f.name, type: fieldClassOf(f, byteOrder, longSize) });
  const event: EventClass = {
    id,
    name: system === '' ? name : `${system}:${name}`,
    streamId: 0,
    payload: struct(own.map(toMember)),
    ...(common.length > 0 ? { context: struct(common.map(toMember)) } : {}),
    ...(printFormat !== undefined ? { printFormat } : {}),
    ftrace: { system, event: name, fields: ftraceFields },
  };
  return event;
}

function struct(members: StructMember[]): StructClass {
  return { kind: 'struct', members, minAlign: 8 };
}

function checkField(f: FieldLine, location: { file?: string; line: number; column: number }): void {
  const { shape } = f.decl;
  const bad = (why: string) => new TraceFormatError('ERR_TRACE_FTRACE_FORMAT', `field ${f.name}: ${why}`, location);
  if (f.offset > 0xffff || f.size > 0xffff) throw bad(`offset ${f.offset} or size ${f.size} beyond a record`);
  if (shape.kind === 'dynamic' && f.size !== 4) throw bad(`a ${f.cType} field must be 4 bytes, not ${f.size}`);
  if (shape.kind === 'array' && shape.length > 0 && f.size % shape.length !== 0) {
    throw bad(`size ${f.size} is not a multiple of the array length ${shape.length}`);
  }
}

/** Path `.../events/SYSTEM/EVENT/format` → SYSTEM. */
function systemFromPath(file: string | undefined): string | undefined {
  const m = file === undefined ? null : /(?:^|\/)([^/]+)\/[^/]+\/format$/.exec(file);
  return m?.[1];
}

function integer(bytes: number, signed: boolean, byteOrder: ByteOrder, base: 10 | 16, text: boolean): IntegerClass {
  return {
    kind: 'int',
    size: bytes * 8,
    signed,
    align: 8,
    byteOrder,
    base,
    encoding: text ? 'utf8' : 'none',
  };
}

const isIntSize = (n: number) => n === 1 || n === 2 || n === 4 || n === 8;

/** Maps one ftrace field onto the shared model (see {@link DynamicClass} for `__data_loc`/`__rel_loc`). */
export function fieldClassOf(f: FieldLine, byteOrder: ByteOrder, longSize: number): FieldClass {
  const { decl } = f;
  const base = decl.pointer ? 16 : 10;
  const text = isCharType(decl.baseType) && !decl.pointer;
  const bytesOfElement = () => sizeOfType(decl.baseType, longSize) ?? 1;
  switch (decl.shape.kind) {
    case 'scalar':
      if (isIntSize(f.size)) return integer(f.size, f.signed, byteOrder, base, false);
      // Structs and other odd sizes are kept as raw bytes.
      return { kind: 'array', element: integer(1, false, byteOrder, 16, false), length: f.size };
    case 'array': {
      const length = decl.shape.length >= 0 ? decl.shape.length : f.size / bytesOfElement();
      const elem = length > 0 ? f.size / length : bytesOfElement();
      const element = isIntSize(elem)
        ? integer(elem, f.signed, byteOrder, base, text && elem === 1)
        : integer(1, false, byteOrder, 16, false);
      return { kind: 'array', element, length: isIntSize(elem) ? length : f.size };
    }
    case 'tail':
      if (text) return { kind: 'string', encoding: 'utf8' };
      // The record's remaining bytes; the length is known only when decoding.
      return { kind: 'array', element: integer(bytesOfElement(), f.signed, byteOrder, base, false), length: 0 };
    case 'dynamic': {
      const elem = bytesOfElement();
      return {
        kind: 'dynamic',
        relative: decl.shape.relative,
        element: integer(elem, f.signed, byteOrder, base, text),
        isString: text,
      };
    }
  }
}
