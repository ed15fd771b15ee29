import { TraceFormatError } from '../../errors.ts';
import type { ClockClass, EventClass, FieldClass, StructClass, StructMember } from '../../model/types.ts';

/** TSDL words a field name must not be; such names (and names that start with `_`) get one `_` prepended. */
const KEYWORDS = new Set([
  'align',
  'callsite',
  'const',
  'char',
  'clock',
  'double',
  'enum',
  'env',
  'event',
  'floating_point',
  'float',
  'integer',
  'int',
  'long',
  'short',
  'signed',
  'stream',
  'string',
  'struct',
  'trace',
  'typealias',
  'typedef',
  'unsigned',
  'variant',
  'void',
  '_Bool',
  '_Complex',
  '_Imaginary',
]);

const SCOPE_PREFIXES = [
  'trace.packet.header.',
  'stream.packet.context.',
  'stream.event.header.',
  'stream.event.context.',
  'event.context.',
  'event.fields.',
];

/**
 * The TSDL spelling of a field name, such that a reader (evtrace or babeltrace2) that drops one leading underscore
 * gets the name back. Names that are not C identifiers cannot be written and throw.
 */
export function tsdlName(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
    throw new TraceFormatError(
      'ERR_TRACE_CTF_WRITE',
      `field name ${JSON.stringify(name)} is not a valid TSDL identifier`,
    );
  }
  return name.startsWith('_') || KEYWORDS.has(name) ? `_${name}` : name;
}

/** A TSDL string literal. */
export function tsdlString(s: string): string {
  return `"${s.replace(/[\\"]/g, (c) => `\\${c}`).replace(/\n/g, '\\n')}"`;
}

/**
 * The TSDL spelling of a sequence length or variant tag path. Its first component is matched against the sibling
 * names (as a reader matches it: one underscore dropped, else exactly), so it names the same member once written.
 */
function refPath(ref: string, members: readonly StructMember[]): string {
  const siblings = members.map((m) => m.name);
  const prefix = SCOPE_PREFIXES.find((p) => ref.startsWith(p)) ?? '';
  const parts = ref.slice(prefix.length).split('.');
  const strip = (c: string) => (c.startsWith('_') ? c.slice(1) : c);
  const first = parts[0]!;
  const head = prefix === '' && !siblings.includes(strip(first)) && siblings.includes(first) ? first : strip(first);
  return prefix + [head, ...parts.slice(1).map(strip)].map(tsdlName).join('.');
}

function typeText(type: FieldClass, indent: string, siblings: readonly StructMember[]): string {
  switch (type.kind) {
    case 'int': {
      const parts = [
        `size = ${type.size}`,
        `align = ${type.align}`,
        `signed = ${type.signed ? 'true' : 'false'}`,
        `byte_order = ${type.byteOrder}`,
        `base = ${type.base}`,
      ];
      if (type.encoding !== 'none') parts.push(`encoding = ${type.encoding === 'utf8' ? 'UTF8' : 'ASCII'}`);
      if (type.mappedClock !== undefined) parts.push(`map = clock.${tsdlName(type.mappedClock)}.value`);
      return `integer { ${parts.join('; ')}; }`;
    }
    case 'float':
      return `floating_point { exp_dig = ${type.expDig}; mant_dig = ${type.mantDig}; align = ${type.align}; byte_order = ${type.byteOrder}; }`;
    case 'string':
      return type.encoding === 'ascii' ? 'string { encoding = ASCII; }' : 'string';
    case 'enum': {
      const inner = `${indent}\t`;
      const mappings = type.mappings.flatMap((m) =>
        m.ranges.map(([low, high]) =>
          low === high
            ? `${inner}${tsdlString(m.label)} = ${low}`
            : `${inner}${tsdlString(m.label)} = ${low} ... ${high}`,
        ),
      );
      return `enum : ${typeText(type.container, indent, siblings)} {\n${mappings.join(',\n')}\n${indent}}`;
    }
    case 'struct':
      return structText(type, indent);
    case 'variant': {
      const inner = `${indent}\t`;
      // An option is spelled like the enumeration label that selects it, which is how readers pair them.
      const tag = siblings.find((m) => m.name === type.tagRef || `_${m.name}` === type.tagRef)?.type;
      const labels = tag?.kind === 'enum' ? tag.mappings.map((m) => m.label) : [];
      const usable = (l: string) => labels.includes(l) && /^[A-Za-z_][A-Za-z0-9_]*$/.test(l) && !KEYWORDS.has(l);
      // Readers drop one underscore from the option's name: the label `_X` names the option stored as `X`.
      const spell = (name: string) => (usable(`_${name}`) ? `_${name}` : usable(name) ? name : undefined);
      const options = type.options.map((o) => {
        const label = spell(o.name);
        const text = declaration(o.name, o.type, inner, type.options);
        return `${inner}${label === undefined ? text : text.replace(/ [A-Za-z0-9_]+$/, ` ${label}`)};`;
      });
      return `variant <${refPath(type.tagRef, siblings)}> {\n${options.join('\n')}\n${indent}}`;
    }
    case 'array':
    case 'sequence':
    case 'dynamic':
      throw new TraceFormatError('ERR_TRACE_CTF_WRITE', `a ${type.kind} has no TSDL type of its own`);
  }
}

function declaration(name: string, type: FieldClass, indent: string, siblings: readonly StructMember[]): string {
  let suffix = '';
  let t = type;
  while (t.kind === 'array' || t.kind === 'sequence') {
    suffix += t.kind === 'array' ? `[${t.length}]` : `[${refPath(t.lengthRef, siblings)}]`;
    t = t.element;
  }
  return `${typeText(t, indent, siblings)} ${tsdlName(name)}${suffix}`;
}

/** A structure class as TSDL (`struct { ... } align(N)`). */
export function structText(type: StructClass, indent = ''): string {
  const inner = `${indent}\t`;
  const members = type.members.map((m) => `${inner}${declaration(m.name, m.type, inner, type.members)};`);
  const body = members.length === 0 ? '{ }' : `{\n${members.join('\n')}\n${indent}}`;
  return `struct ${body}${type.minAlign > 1 ? ` align(${type.minAlign})` : ''}`;
}

/** A `clock { ... };` block. */
export function clockText(clock: ClockClass): string {
  const lines = [`\tname = ${tsdlName(clock.name)};`];
  if (clock.uuid !== undefined) lines.push(`\tuuid = ${tsdlString(clock.uuid)};`);
  if (clock.description !== undefined) lines.push(`\tdescription = ${tsdlString(clock.description)};`);
  lines.push(`\tfreq = ${clock.freq};`);
  if (clock.precision !== undefined) lines.push(`\tprecision = ${clock.precision};`);
  lines.push(`\toffset_s = ${clock.offsetSeconds};`, `\toffset = ${clock.offsetCycles};`);
  lines.push(`\tabsolute = ${clock.absolute ? 'true' : 'false'};`);
  return `clock {\n${lines.join('\n')}\n};\n`;
}

/** An `event { ... };` block. */
export function eventText(event: EventClass): string {
  const lines = [`\tname = ${tsdlString(event.name)};`, `\tid = ${event.id};`, `\tstream_id = ${event.streamId};`];
  if (event.logLevel !== undefined) lines.push(`\tloglevel = ${event.logLevel};`);
  if (event.modelEmfUri !== undefined) lines.push(`\tmodel.emf.uri = ${tsdlString(event.modelEmfUri)};`);
  if (event.context) lines.push(`\tcontext := ${structText(event.context, '\t')};`);
  lines.push(`\tfields := ${structText(event.payload, '\t')};`);
  return `event {\n${lines.join('\n')}\n};\n`;
}
