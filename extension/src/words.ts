/** Counted nouns in messages ("1 finding", "3 files", "2 cache entries"). Pure: no `vscode`. */

export function plural(n: number, word: string, many = `${word}s`): string {
  return `${n} ${n === 1 ? word : many}`;
}
