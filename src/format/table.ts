/** Plain-text tables: columns padded to their widest cell, no borders. */

export type Align = 'left' | 'right';

/**
 * Renders rows under a header, two spaces between columns. The last column is never padded,
 * so a long statement at the end of a row does not push trailing spaces.
 * @param header column titles
 * @param rows cells, one array per row
 * @param align per column; default left
 * @param indent spaces before every line
 * @returns the lines
 */
export function table(header: string[], rows: string[][], align: Align[] = [], indent = 2): string[] {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  const pad = ' '.repeat(indent);
  const line = (cells: string[]) =>
    pad +
    cells
      .map((cell, column) => {
        if (column === cells.length - 1 && align[column] !== 'right') return cell;
        const width = widths[column] ?? 0;
        return align[column] === 'right' ? cell.padStart(width) : cell.padEnd(width);
      })
      .join('  ');
  return [line(header), ...rows.map(line)].map((text) => text.trimEnd());
}

/**
 * SQL on one line, whitespace collapsed, cut to `max` characters with an ellipsis.
 * @param sql a statement
 * @param max the widest it may be
 * @returns the shortened text
 */
export function oneLine(sql: string, max = 100): string {
  const flat = sql.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

/**
 * Label/value lines with the values aligned.
 * @param pairs [label, value] pairs
 * @returns the lines
 */
export function fields(pairs: [string, string][]): string[] {
  const width = Math.max(...pairs.map(([label]) => label.length));
  return pairs.map(([label, value]) => `${label.padEnd(width)}  ${value}`);
}
