import type { FilterNode, ParsedFilter } from './ast.ts';

/**
 * Evaluates the expression tree with short-circuit logic, iteratively (an explicit stack, so depth costs no call
 * stack). The compiled evaluators run the kernel's branch program instead; this is the reference they are tested
 * against and the baseline the benchmark compares with.
 */
export function evaluateTree(root: FilterNode | undefined, test: (pred: number) => boolean): boolean {
  if (root === undefined) return true;
  interface Frame {
    node: FilterNode;
    next: number;
  }
  const stack: Frame[] = [{ node: root, next: 0 }];
  let result = false;
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    const node = frame.node;
    if (node.kind === 'pred') {
      result = test(node.index);
      stack.pop();
    } else if (node.kind === 'not') {
      if (frame.next === 0) {
        frame.next = 1;
        stack.push({ node: node.child, next: 0 });
      } else {
        result = !result;
        stack.pop();
      }
    } else {
      // After a child: stop early when its result decides the whole (false for and, true for or).
      if (frame.next > 0 && result === (node.kind === 'or')) {
        stack.pop();
        continue;
      }
      if (frame.next === node.children.length) {
        stack.pop();
        continue;
      }
      stack.push({ node: node.children[frame.next++]!, next: 0 });
    }
  }
  return result;
}

/**
 * Renders a tree as a kernel filter string, each comparison as written. The result parses back to the same tree;
 * parentheses appear only where precedence needs them.
 */
export function renderTree(filter: ParsedFilter, root: FilterNode | undefined = filter.root): string {
  if (root === undefined) return '0';
  const out: string[] = [];
  type Item = FilterNode | string;
  const stack: { item: Item; parent: FilterNode['kind'] | undefined }[] = [{ item: root, parent: undefined }];
  while (stack.length > 0) {
    const { item, parent } = stack.pop()!;
    if (typeof item === 'string') {
      out.push(item);
      continue;
    }
    if (item.kind === 'pred') {
      out.push(filter.predicates[item.index]!.text);
    } else if (item.kind === 'not') {
      out.push('!');
      stack.push({ item: item.child, parent: 'not' });
    } else {
      const paren = parent === 'not' || (parent === 'and' && item.kind === 'or');
      const sep = item.kind === 'and' ? ' && ' : ' || ';
      const parts: Item[] = [];
      if (paren) parts.push('(');
      item.children.forEach((c, i) => {
        if (i > 0) parts.push(sep);
        parts.push(c);
      });
      if (paren) parts.push(')');
      for (let i = parts.length - 1; i >= 0; i--) stack.push({ item: parts[i]!, parent: item.kind });
    }
  }
  return out.join('');
}
