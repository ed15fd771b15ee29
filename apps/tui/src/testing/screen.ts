/**
 * A small VT100/xterm screen for end-to-end tests: feeds on what a program writes to its pseudo-terminal and keeps
 * the text of the screen the user would see (primary and alternate buffers, cursor moves, erases, scrolling,
 * automatic wrap). Attributes and colours are dropped but counted, so tests can tell that colour is off.
 */
export class Screen {
  cols: number;
  rows: number;
  #primary: string[][];
  #alternate: string[][] | undefined;
  #x = 0;
  #y = 0;
  #saved: [number, number] = [0, 0];
  /** Whether the alternate screen is shown. */
  alternate = false;
  /** SGR sequences that set a colour (30-37, 38, 40-47, 48, 90-97, 100-107). */
  colourSequences = 0;
  cursorVisible = true;
  #pending = '';

  constructor(cols: number, rows: number) {
    this.cols = cols;
    this.rows = rows;
    this.#primary = this.#blank();
  }

  #blank(): string[][] {
    return Array.from({ length: this.rows }, () => Array<string>(this.cols).fill(' '));
  }

  get #grid(): string[][] {
    return this.alternate ? this.#alternate! : this.#primary;
  }

  /** The screen's text, one string per row, trailing spaces removed. */
  text(): string {
    return this.#grid.map((row) => row.join('').trimEnd()).join('\n');
  }

  /** A resize: the grid keeps its top-left content. */
  resize(cols: number, rows: number): void {
    const fix = (g: string[][]) => {
      while (g.length < rows) g.push([]);
      g.length = rows;
      for (const row of g) {
        while (row.length < cols) row.push(' ');
        row.length = cols;
      }
    };
    this.cols = cols;
    this.rows = rows;
    fix(this.#primary);
    if (this.#alternate) fix(this.#alternate);
    this.#y = Math.min(this.#y, rows - 1);
    this.#x = Math.min(this.#x, cols - 1);
  }

  write(data: string): void {
    const s = this.#pending + data;
    this.#pending = '';
    let i = 0;
    while (i < s.length) {
      const ch = s[i]!;
      if (ch === '\x1b') {
        const end = this.#escape(s, i);
        if (end < 0) {
          this.#pending = s.slice(i);
          return;
        }
        i = end;
        continue;
      }
      i++;
      if (ch === '\r') this.#x = 0;
      else if (ch === '\n') this.#lineFeed();
      else if (ch === '\b') this.#x = Math.max(0, this.#x - 1);
      else if (ch === '\t') this.#x = Math.min(this.cols - 1, (Math.floor(this.#x / 8) + 1) * 8);
      else if (ch >= ' ') this.#put(ch);
    }
  }

  #put(ch: string): void {
    if (this.#x >= this.cols) {
      this.#x = 0;
      this.#lineFeed();
    }
    this.#grid[this.#y]![this.#x] = ch;
    this.#x++;
  }

  #lineFeed(): void {
    if (this.#y < this.rows - 1) this.#y++;
    else {
      this.#grid.shift();
      this.#grid.push(Array<string>(this.cols).fill(' '));
    }
  }

  /** Interprets the escape sequence at `i`; returns the index after it, or -1 when it is incomplete. */
  #escape(s: string, i: number): number {
    const next = s[i + 1];
    if (next === undefined) return -1;
    if (next === '[') {
      let j = i + 2;
      while (j < s.length && !(s.charCodeAt(j) >= 0x40 && s.charCodeAt(j) <= 0x7e)) j++;
      if (j >= s.length) return -1;
      this.#csi(s.slice(i + 2, j), s[j]!);
      return j + 1;
    }
    if (next === ']') {
      // OSC: up to BEL or ST.
      const bel = s.indexOf('\x07', i);
      const st = s.indexOf('\x1b\\', i);
      const ends = [bel >= 0 ? bel + 1 : -1, st >= 0 ? st + 2 : -1].filter((e) => e > 0);
      return ends.length === 0 ? -1 : Math.min(...ends);
    }
    if (next === '7') this.#saved = [this.#x, this.#y];
    else if (next === '8') [this.#x, this.#y] = this.#saved;
    else if (next === 'c') {
      this.#primary = this.#blank();
      this.#x = this.#y = 0;
    }
    if (next === '(' || next === ')') return i + 3 <= s.length ? i + 3 : -1;
    return i + 2;
  }

  #csi(params: string, final: string): void {
    const priv = params.startsWith('?');
    const nums = (priv ? params.slice(1) : params).split(';').map((p) => (p === '' ? undefined : Number(p)));
    const n = (k: number, d = 1) => nums[k] ?? d;
    const g = this.#grid;
    switch (final) {
      case 'A':
        this.#y = Math.max(0, this.#y - n(0));
        break;
      case 'B':
        this.#y = Math.min(this.rows - 1, this.#y + n(0));
        break;
      case 'C':
        this.#x = Math.min(this.cols - 1, this.#x + n(0));
        break;
      case 'D':
        this.#x = Math.max(0, this.#x - n(0));
        break;
      case 'E':
        this.#y = Math.min(this.rows - 1, this.#y + n(0));
        this.#x = 0;
        break;
      case 'F':
        this.#y = Math.max(0, this.#y - n(0));
        this.#x = 0;
        break;
      case 'G':
        this.#x = Math.min(this.cols - 1, n(0) - 1);
        break;
      case 'd':
        this.#y = Math.min(this.rows - 1, n(0) - 1);
        break;
      case 'H':
      case 'f':
        this.#y = Math.min(this.rows - 1, n(0) - 1);
        this.#x = Math.min(this.cols - 1, n(1) - 1);
        break;
      case 'J': {
        const mode = n(0, 0);
        const clear = (y: number, from: number, to: number) => {
          for (let x = from; x < to; x++) g[y]![x] = ' ';
        };
        if (mode === 0) {
          clear(this.#y, this.#x, this.cols);
          for (let y = this.#y + 1; y < this.rows; y++) clear(y, 0, this.cols);
        } else if (mode === 1) {
          for (let y = 0; y < this.#y; y++) clear(y, 0, this.cols);
          clear(this.#y, 0, this.#x + 1);
        } else for (let y = 0; y < this.rows; y++) clear(y, 0, this.cols);
        break;
      }
      case 'K': {
        const mode = n(0, 0);
        const row = g[this.#y]!;
        const [from, to] = mode === 0 ? [this.#x, this.cols] : mode === 1 ? [0, this.#x + 1] : [0, this.cols];
        for (let x = from; x < to; x++) row[x] = ' ';
        break;
      }
      case 'm':
        for (let k = 0; k < nums.length; k++) {
          const v = nums[k];
          if (v === undefined) continue;
          if ((v >= 30 && v <= 38) || (v >= 40 && v <= 48) || (v >= 90 && v <= 97) || (v >= 100 && v <= 107)) {
            this.colourSequences++;
            if (v === 38 || v === 48) k += nums[k + 1] === 5 ? 2 : 4;
          }
        }
        break;
      case 'h':
      case 'l':
        if (priv) {
          const on = final === 'h';
          for (const mode of nums) {
            if (mode === 1049 || mode === 47 || mode === 1047) {
              if (on && !this.alternate) {
                this.#saved = [this.#x, this.#y];
                this.#alternate = this.#blank();
                this.alternate = true;
              } else if (!on && this.alternate) {
                this.alternate = false;
                [this.#x, this.#y] = this.#saved;
              }
            } else if (mode === 25) this.cursorVisible = on;
          }
        }
        break;
      default:
        break;
    }
  }
}

/** A count the status bar shows after `label` (`received 1.25M`), or -1 when it shows none. */
function countShown(text: string, label: string): number {
  const m = new RegExp(`${label} (\\d+(?:\\.\\d+)?)([kMG]?)`).exec(text);
  if (m === null) return -1;
  return Number(m[1]) * ({ '': 1, k: 1e3, M: 1e6, G: 1e9 } as const)[m[2] as '' | 'k' | 'M' | 'G'];
}

/** The status bar's count of events received from an agent session, or -1 before it shows one. */
export const receivedShown = (text: string): number => countShown(text, 'received');

/** The status bar's count of events the agent's queue dropped for this viewer (0 while it shows none). */
export const missedShown = (text: string): number => Math.max(0, countShown(text, 'viewer missed'));
