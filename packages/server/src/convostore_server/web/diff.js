// A line diff (longest common subsequence) between two texts, for memory versions.

const MAX_CELLS = 4_000_000; // the LCS table's size bound: past it, a whole-block replacement

/** [{op: " " | "-" | "+", text}] turning `a` into `b`, line by line. */
export function diffLines(a, b) {
  const x = a.split("\n");
  const y = b.split("\n");
  let start = 0;
  while (start < x.length && start < y.length && x[start] === y[start]) start++;
  let endX = x.length;
  let endY = y.length;
  while (endX > start && endY > start && x[endX - 1] === y[endY - 1]) {
    endX--;
    endY--;
  }
  const head = x.slice(0, start).map((text) => ({ op: " ", text }));
  const tail = x.slice(endX).map((text) => ({ op: " ", text }));
  const xs = x.slice(start, endX);
  const ys = y.slice(start, endY);
  return [...head, ...middle(xs, ys), ...tail];
}

function middle(xs, ys) {
  const n = xs.length;
  const m = ys.length;
  if (n * m > MAX_CELLS) {
    return [...xs.map((text) => ({ op: "-", text })), ...ys.map((text) => ({ op: "+", text }))];
  }
  // lengths[i][j]: the LCS of xs[i:] and ys[j:], in one flat array
  const width = m + 1;
  const lengths = new Uint32Array((n + 1) * width);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lengths[i * width + j] =
        xs[i] === ys[j]
          ? lengths[(i + 1) * width + j + 1] + 1
          : Math.max(lengths[(i + 1) * width + j], lengths[i * width + j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (xs[i] === ys[j]) {
      out.push({ op: " ", text: xs[i] });
      i++;
      j++;
    } else if (lengths[(i + 1) * width + j] >= lengths[i * width + j + 1]) {
      out.push({ op: "-", text: xs[i++] });
    } else {
      out.push({ op: "+", text: ys[j++] });
    }
  }
  while (i < n) out.push({ op: "-", text: xs[i++] });
  while (j < m) out.push({ op: "+", text: ys[j++] });
  return out;
}
