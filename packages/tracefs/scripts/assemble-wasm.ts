// Assembles src/pages/count-pages.wat into src/pages/count-pages.wasm.ts (the module's bytes as base64), which the package ships
// so that it needs no assembler at run time. Run after editing the .wat: node scripts/assemble-wasm.ts
// (page-counter.test.ts fails while the two disagree).
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import wabt from 'wabt';

export async function assembleCountPages(): Promise<Uint8Array> {
  const source = readFileSync(fileURLToPath(new URL('../src/pages/count-pages.wat', import.meta.url)), 'utf8');
  const module = (await wabt()).parseWat('count-pages.wat', source);
  try {
    module.validate();
    return module.toBinary({}).buffer;
  } finally {
    module.destroy();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const bytes = await assembleCountPages();
  const out = fileURLToPath(new URL('../src/pages/count-pages.wasm.ts', import.meta.url));
  writeFileSync(
    out,
    `// Generated from count-pages.wat by scripts/assemble-wasm.ts: do not edit.\nexport const COUNT_PAGES_WASM = '${Buffer.from(bytes).toString('base64')}';\n`,
  );
  console.log(`${out}: ${bytes.length} bytes`);
}
