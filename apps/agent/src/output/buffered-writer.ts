/**
 * Collects output text into large writes. Appended to one string (V8 links the pieces and copies them once, when the
 * write encodes it), which costs less than collecting them in an array and joining it.
 */
export function bufferedWriter(write: (text: string) => void): { put(text: string): void; flush(): void } {
  let pending = '';
  return {
    put(text) {
      pending += text;
      if (pending.length >= 1 << 16) this.flush();
    },
    flush() {
      if (pending.length > 0) write(pending);
      pending = '';
    },
  };
}
