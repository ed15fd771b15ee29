/**
 * Which fields an ftrace `print fmt` shows as addresses or hexadecimal: those passed straight (casts aside) to a `%p`
 * address conversion (`%p`, `%pS`, `%ps`, `%pK`, `%px`, `%pB`, `%pF`, `%pf`) or to an integer conversion in base 16
 * (`%x`, `%lx`, `%#llx`, `%08x`...). JSON writes those as hex strings whatever their declared type: `call_site` is an
 * `unsigned long` that kmem's events print with `%pS`.
 */

/** The names of the fields `printFormat` prints as addresses or in hex (empty when it cannot be read). */
export function hexFields(printFormat: string | undefined): ReadonlySet<string> {
  const out = new Set<string>();
  if (printFormat === undefined) return out;
  const literal = leadingLiteral(printFormat);
  if (literal === undefined) return out;
  const args = splitArgs(printFormat.slice(literal.end));
  let arg = 0;
  // Conversions in order, each with the argument it consumes (`*` widths and precisions take one more).
  const conversion = /%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d+))?(hh|h|ll|l|z|j|t|L)?([a-zA-Z%])/g;
  for (let m = conversion.exec(literal.text); m !== null; m = conversion.exec(literal.text)) {
    const kind = m[5]!;
    if (kind === '%') continue;
    if (m[2] === '*') arg++;
    if (m[3] === '*') arg++;
    const field = fieldOf(args[arg++]);
    if (field === undefined) continue;
    const after = literal.text[m.index + m[0].length] ?? '';
    if (kind === 'x' || kind === 'X' || (kind === 'p' && (after === '' || /[^a-zA-Z]|[SsBKxFf]/.test(after))))
      out.add(field);
  }
  return out;
}

/** The first string literal (adjacent literals joined) and where the text after it starts. */
function leadingLiteral(text: string): { text: string; end: number } | undefined {
  let i = 0;
  let value = '';
  let found = false;
  for (;;) {
    while (i < text.length && /\s/.test(text[i]!)) i++;
    if (text[i] !== '"') break;
    found = true;
    i++;
    while (i < text.length && text[i] !== '"') {
      // Escapes are kept as written: only `%` and the closing quote matter here.
      if (text[i] === '\\') value += text[i++];
      value += text[i++] ?? '';
    }
    if (i >= text.length) return undefined;
    i++;
  }
  return found ? { text: value, end: i } : undefined;
}

/** The arguments after the format, split at commas outside brackets and string literals. */
function splitArgs(text: string): string[] {
  const args: string[] = [];
  let depth = 0;
  let current = '';
  let quote = '';
  const rest = text.replace(/^\s*,/, '');
  for (let i = 0; i < rest.length; i++) {
    const c = rest[i]!;
    if (quote !== '') {
      if (c === '\\') current += rest[i++];
      else if (c === quote) quote = '';
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') depth--;
    else if (c === ',' && depth === 0) {
      args.push(current);
      current = '';
      continue;
    }
    current += c;
  }
  if (current.trim() !== '') args.push(current);
  return args;
}

const CASTS = String.raw`(?:\(\s*[\w\s*]+\)\s*)*`;
const PLAIN = new RegExp(String.raw`^\s*${CASTS}\(?\s*REC->(\w+)\s*\)?\s*$`);
/** `REC->x != -1UL ? REC->x : 0` (mm_page_alloc's pfn): the field the condition guards. */
const GUARDED = new RegExp(String.raw`^\s*\(?\s*REC->(\w+)\s*[!=<>]=?[^?]*\?\s*${CASTS}\(?\s*REC->(\w+)\s*\)?\s*:`);

/**
 * `REC->name`, possibly in parentheses and behind casts, or a condition on a field choosing that field, to `name`;
 * undefined for any other expression.
 */
function fieldOf(arg: string | undefined): string | undefined {
  if (arg === undefined) return undefined;
  const plain = PLAIN.exec(arg);
  if (plain !== null) return plain[1];
  const guarded = GUARDED.exec(arg);
  return guarded !== null && guarded[1] === guarded[2] ? guarded[1] : undefined;
}
