/**
 * Where commands write: results on stdout, one line at a time; colour only
 * on a terminal and without `NO_COLOR`.
 *
 * @module
 */

/** Print a line on stdout. */
export function out(text: string): void {
  console.log(text);
}

/** Whether stdout gets colours: a terminal, and `NO_COLOR` unset. */
export function useColor(): boolean {
  try {
    return !Deno.env.get("NO_COLOR") && Deno.stdout.isTerminal();
  } catch {
    return false;
  }
}
