/**
 * std::sort as GCC's libstdc++ carries it out (bits/stl_algo.h and
 * bits/stl_heap.h: introsort with a median-of-three pivot, heapsort past
 * 2*log2(n) levels, insertion sort for runs of 16 and under), on an array of
 * indices with a "comes before" predicate.
 *
 * Why not Array.prototype.sort: Triton's classification extension sorts
 * with `probs[a] > probs[b]` (server src/classification.cc). That order is
 * not stable, and with a NaN among the values it is not a strict weak order
 * at all, so the answer is whatever this exact algorithm does with it. The
 * unguarded scans of the C++ code can run off the array for such an order;
 * here they stop at its ends instead.
 */

const THRESHOLD = 16;

type Before = (a: number, b: number) => boolean;

export function stdSort(items: number[], before: Before): void {
  const n = items.length;
  if (n < 2) return;
  introsortLoop(items, 0, n, 2 * Math.floor(Math.log2(n)), before);
  finalInsertionSort(items, 0, n, before);
}

function swap(a: number[], i: number, j: number): void {
  const t = a[i] as number;
  a[i] = a[j] as number;
  a[j] = t;
}

function at(a: readonly number[], i: number): number {
  return a[i] as number;
}

function introsortLoop(a: number[], first: number, last: number, depth: number, before: Before): void {
  while (last - first > THRESHOLD) {
    if (depth === 0) {
      heapSort(a, first, last, before);
      return;
    }
    depth -= 1;
    const cut = partitionPivot(a, first, last, before);
    introsortLoop(a, cut, last, depth, before);
    last = cut;
  }
}

function partitionPivot(a: number[], first: number, last: number, before: Before): number {
  const mid = first + Math.floor((last - first) / 2);
  moveMedianToFirst(a, first, first + 1, mid, last - 1, before);
  return unguardedPartition(a, first + 1, last, first, before);
}

function moveMedianToFirst(a: number[], result: number, x: number, y: number, z: number, before: Before): void {
  const c = (i: number, j: number): boolean => before(at(a, i), at(a, j));
  if (c(x, y)) {
    if (c(y, z)) swap(a, result, y);
    else if (c(x, z)) swap(a, result, z);
    else swap(a, result, x);
  } else if (c(x, z)) swap(a, result, x);
  else if (c(y, z)) swap(a, result, z);
  else swap(a, result, y);
}

function unguardedPartition(a: number[], first: number, last: number, pivot: number, before: Before): number {
  for (;;) {
    while (first < last && before(at(a, first), at(a, pivot))) first += 1;
    last -= 1;
    while (last > pivot && before(at(a, pivot), at(a, last))) last -= 1;
    if (!(first < last)) return first;
    swap(a, first, last);
    first += 1;
  }
}

function finalInsertionSort(a: number[], first: number, last: number, before: Before): void {
  if (last - first > THRESHOLD) {
    insertionSort(a, first, first + THRESHOLD, before);
    for (let i = first + THRESHOLD; i < last; i++) linearInsert(a, first, i, before);
  } else {
    insertionSort(a, first, last, before);
  }
}

function insertionSort(a: number[], first: number, last: number, before: Before): void {
  for (let i = first + 1; i < last; i++) {
    const value = at(a, i);
    if (before(value, at(a, first))) {
      for (let j = i; j > first; j--) a[j] = at(a, j - 1);
      a[first] = value;
    } else {
      linearInsert(a, first, i, before);
    }
  }
}

/** __unguarded_linear_insert, stopped at `floor`. */
function linearInsert(a: number[], floor: number, i: number, before: Before): void {
  const value = at(a, i);
  let hole = i;
  while (hole > floor && before(value, at(a, hole - 1))) {
    a[hole] = at(a, hole - 1);
    hole -= 1;
  }
  a[hole] = value;
}

/** __partial_sort(first, last, last): make_heap, then sort_heap. */
function heapSort(a: number[], first: number, last: number, before: Before): void {
  const len = last - first;
  if (len >= 2) {
    for (let parent = Math.floor((len - 2) / 2); parent >= 0; parent--) adjustHeap(a, first, parent, len, at(a, first + parent), before);
  }
  for (let end = last; end - first > 1;) {
    end -= 1;
    const value = at(a, end);
    a[end] = at(a, first);
    adjustHeap(a, first, 0, end - first, value, before);
  }
}

function adjustHeap(a: number[], first: number, hole: number, len: number, value: number, before: Before): void {
  const top = hole;
  let child = hole;
  while (child < Math.floor((len - 1) / 2)) {
    child = 2 * (child + 1);
    if (before(at(a, first + child), at(a, first + child - 1))) child -= 1;
    a[first + hole] = at(a, first + child);
    hole = child;
  }
  if ((len & 1) === 0 && child === Math.floor((len - 2) / 2)) {
    child = 2 * (child + 1);
    a[first + hole] = at(a, first + child - 1);
    hole = child - 1;
  }
  let parent = Math.floor((hole - 1) / 2);
  while (hole > top && before(at(a, first + parent), value)) {
    a[first + hole] = at(a, first + parent);
    hole = parent;
    parent = Math.floor((hole - 1) / 2);
  }
  a[first + hole] = value;
}
