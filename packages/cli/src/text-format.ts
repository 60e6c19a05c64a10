import type { Message, MessageContent } from '@keepsake/core';

/** A stored time (ms since the epoch) as ISO 8601, or `-` for none. */
export function formatTime(milliseconds: number | null | undefined): string {
  if (milliseconds === null || milliseconds === undefined) return '-';
  return new Date(milliseconds).toISOString();
}

/** A message's content as one line of text: text parts joined, other parts named. */
export function contentText(content: MessageContent): string {
  if (typeof content === 'string') return content;
  return content
    .map((part) =>
      part.type === 'text' && typeof part.text === 'string' ? part.text : `[${part.type}]`,
    )
    .join(' ');
}

/** One transcript line: role, then what a marker or a partial answer says about it. */
export function messageLine(message: Message, index: number): string {
  const notes: string[] = [];
  if (message.partial === true) notes.push('partial');
  if (message.recovered === true) notes.push('recovered');
  if (message.marker !== undefined) {
    notes.push(`marker: ${message.marker.type} (${message.marker.wording})`);
  }
  const suffix = notes.length === 0 ? '' : `  [${notes.join(', ')}]`;
  return `  ${String(index + 1).padStart(3)}  ${message.role.padEnd(9)} ${oneLine(contentText(message.content))}${suffix}`;
}

/** Newlines shown as ⏎ so each message stays on one line of output; long text shortened. */
export function oneLine(text: string, maximum = 200): string {
  const flat = text.replace(/\r?\n/g, ' ⏎ ');
  return flat.length > maximum ? `${flat.slice(0, maximum - 1)}…` : flat;
}

/** Left-aligned columns, for tables of ids and counts. */
export function table(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, column) => {
      widths[column] = Math.max(widths[column] ?? 0, cell.length);
    });
  }
  return rows.map((row) =>
    row
      .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}
