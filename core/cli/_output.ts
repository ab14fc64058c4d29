/**
 * Where commands write: results on stdout, one line at a time; colour only
 * on a terminal and without `NO_COLOR`.
 *
 * @module
 */
import { wantsColour } from "../tool/reporter.ts";

/** Print a line on stdout. */
export function out(text: string): void {
  console.log(text);
}

/** Whether stdout gets colours: `FORCE_COLOR`, else a terminal without `NO_COLOR`. */
export function useColor(): boolean {
  return wantsColour(Deno.stdout);
}
