/** A text box's line on screen: its text with the cursor shown in inverse video at the insertion point. */
import { Text } from 'ink';
import type { LineState } from './line-edit.ts';

export function LineText(props: { line: LineState }) {
  const { text, cursor } = props.line;
  return (
    <>
      {text.slice(0, cursor)}
      <Text inverse>{text[cursor] ?? ' '}</Text>
      {text.slice(cursor + 1)}
    </>
  );
}
