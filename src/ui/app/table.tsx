import type { ComponentChildren } from 'preact';

export interface TableRow {
  key: string;
  class?: string;
  cells: ComponentChildren[];
}

/** A table with a caption and column headers; the first cell of a row is its row header. */
export function Table({
  caption,
  head,
  rows,
  empty,
}: {
  caption: string;
  head: string[];
  rows: TableRow[];
  empty?: string;
}) {
  if (rows.length === 0 && empty) return <p>{empty}</p>;
  return (
    <table>
      <caption class="visually-hidden">{caption}</caption>
      <thead>
        <tr>
          {head.map((h) => (
            <th key={h} scope="col">
              {h}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.key} class={r.class}>
            {r.cells.map((cell, i) =>
              i === 0 ? (
                <th key={i} scope="row">
                  {cell}
                </th>
              ) : (
                <td key={i}>{cell}</td>
              ),
            )}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function KeyValues({ caption, map }: { caption: string; map: Record<string, string> }) {
  return (
    <Table
      caption={caption}
      head={['Key', 'Value']}
      rows={Object.entries(map)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => ({ key: k, cells: [k, v] }))}
      empty="None."
    />
  );
}
