//! `#[stencil]` functions on the CPU backend: the array's rows in parallel, each row's interior
//! a plain loop with no test per point, which the compiler vectorizes.

use super::{Geometry, Point};
use crate::cpu::check::{self, StencilAt};
use crate::cpu::fault::KernelFault;
use crate::cpu::tasks::{self, guarded, SharedPtr};

/// Columns per task of a long row (a 1-D array is one row).
const CHUNK: usize = 1 << 14;

/// Writes `out[p] = f(args, p)` at each interior point `p` of `g`, and `border`, where given, at
/// the others; rows in parallel. A fault in `f` (an index out of an array's bounds) is the
/// returned error, and a panic its message, with its source line. `f` is a function, not a closure, so that the compiler inlines it into each row's loop
/// however large the stencil (it takes the values a closure would capture as `args`).
///
/// `f` must be safe to call at every interior point: the caller guarantees it.
pub fn rows<T: Copy + Send + Sync, A: Sync, F: Fn(&A, Point) -> T + Sync + Copy>(
    g: &Geometry,
    args: &A,
    f: F,
    out: &mut [T],
    border: Option<T>,
) -> Result<(), KernelFault> {
    let m = g.shape[2];
    if out.is_empty() || m == 0 {
        return Ok(());
    }
    let (rows, cells) = (out.len() / m, SharedPtr(out.as_mut_ptr()));
    if m > CHUNK {
        // Long rows: each in segments of its own.
        let per_row = m.div_ceil(CHUNK);
        let task = |t: usize| {
            let (r, c) = (t / per_row, t % per_row * CHUNK);
            // SAFETY: the segment lies in row `r` of `out`, and no other task's does.
            let seg = unsafe { cells.slice(r * m + c, CHUNK.min(m - c)) };
            guarded(|| segment_wide(g, r, c, seg, args, f, border))
        };
        return tasks::run(rows * per_row, &task);
    }
    // Short rows: as many to a task as make a segment's worth, their faults caught once.
    let per_task = CHUNK / m;
    let task = |t: usize| {
        let first = t * per_task;
        let count = per_task.min(rows - first);
        // SAFETY: the task's rows of `out`, which no other task's overlap.
        let rows = unsafe { cells.slice(first * m, count * m) };
        guarded(|| {
            for (k, row) in rows.chunks_mut(m).enumerate() {
                segment_wide(g, first + k, 0, row, args, f, border);
            }
        })
    };
    tasks::run(rows.div_ceil(per_task), &task)
}

/// [`rows`] in checked mode, where `f` tests its reads, over arrays of `rank` axes: a task per
/// row, and the error the fault of the first row in order that has one, so that a report names
/// the first point at fault. Where `views` (reads through views are tested), each point is made
/// known while `f` runs, for their reports, as views know no point.
pub fn checked_rows<T: Copy + Send + Sync, A: Sync, F: Fn(&A, Point) -> T + Sync + Copy>(
    (g, rank, views): (&Geometry, usize, bool),
    args: &A,
    f: F,
    out: &mut [T],
    border: Option<T>,
) -> Result<(), KernelFault> {
    let (shape, at) = (g.shape, check::at_stencil_point);
    let f = move |args: &A, p: Point| {
        if views {
            let flat = p.flat(g);
            at(Some(StencilAt { flat, shape, rank }));
        }
        f(args, p)
    };
    // An array with no column has no element: `max` only keeps the rows' length valid.
    let m = g.shape[2].max(1);
    let cells = SharedPtr(out.as_mut_ptr());
    let task = |r: usize| {
        // SAFETY: row `r` of `out`, which no other task touches.
        let row = unsafe { cells.slice(r * m, m) };
        let run = guarded(|| segment(g, r, 0, row, args, f, border));
        at(None);
        run
    };
    tasks::run(out.len() / m, &task)
}

crate::cpu::exec::wide_variants!(
    /// [`segment`], its loop compiled for the baseline CPU and for AVX-512 CPUs (where a
    /// stencil of narrow elements widened for its sums vectorizes).
    segment_wide [T: Copy, A, F: Fn(&A, Point) -> T] [T, A, F]
    (g: &Geometry, r: usize, from: usize, seg: &mut [T], args: &A, f: F, border: Option<T>) => segment
);

/// The columns `from..` of row `r` (a flat row of the three axes' first two), in `seg`.
#[inline(always)]
fn segment<T: Copy, A, F: Fn(&A, Point) -> T>(
    g: &Geometry,
    r: usize,
    from: usize,
    seg: &mut [T],
    args: &A,
    f: F,
    border: Option<T>,
) {
    let (m, to) = (g.shape[2], from + seg.len());
    let inside = g.inside(0, r / g.shape[1]) && g.inside(1, r % g.shape[1]);
    // The interior columns of the row, within the segment.
    let (lo, hi) = if inside {
        let hi = m.saturating_sub(g.above[2]).clamp(from, to);
        (g.below[2].clamp(from, hi), hi)
    } else {
        (from, from)
    };
    if let Some(c) = border {
        seg[..lo - from].fill(c);
        seg[hi - from..].fill(c);
    }
    for (k, o) in seg[lo - from..hi - from].iter_mut().enumerate() {
        *o = f(
            args,
            Point {
                base: r * m,
                row: 0,
                col: lo + k,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stencil::Reach;

    #[test]
    fn rows_compute_the_interior_and_fill_the_border() {
        for (shape, chunked) in [
            ([2, 5, 7], false),
            ([1, 1, 3 * CHUNK + 5], true),
            ([3, 4, 1], false),
        ] {
            let g = Geometry::new(
                shape,
                Reach {
                    below: [0, 1, 2],
                    above: [1, 0, 1],
                },
            );
            let mut out = vec![7u64; g.len()];
            rows(&g, &g, |g, p| p.flat(g) as u64 * 10, &mut out, Some(1)).unwrap();
            for (p, v) in out.iter().enumerate() {
                let (z, y, x) = (
                    p / (shape[1] * shape[2]),
                    p / shape[2] % shape[1],
                    p % shape[2],
                );
                let expect = if g.interior([z, y, x]) {
                    p as u64 * 10
                } else {
                    1
                };
                assert_eq!(*v, expect, "{shape:?} {chunked} at {:?}", (z, y, x));
            }
            let mut kept = vec![7u64; g.len()];
            rows(&g, &g, |g, p| p.flat(g) as u64, &mut kept, None).unwrap();
            assert!(kept
                .iter()
                .enumerate()
                .all(|(p, &v)| v == 7 || v == p as u64));
        }
    }

    /// A 2-D geometry of `shape` under the reach `below`, `above`.
    fn geometry(shape: [usize; 2], below: [usize; 2], above: [usize; 2]) -> Geometry {
        Geometry::new(shape, Reach { below, above })
    }

    #[test]
    fn checked_rows_report_the_first_row_at_fault() {
        let g = geometry([40, 3], [1, 0], [1, 0]);
        let mut out = vec![0u32; g.len()];
        let f = |g: &Geometry, p: Point| -> u32 {
            let row = p.flat(g) / 3;
            if row == 7 || row == 30 {
                panic!("row {row}")
            }
            row as u32
        };
        let err = checked_rows((&g, 2, false), &g, f, &mut out, Some(9));
        assert!(
            matches!(&err, Err(KernelFault::Message(m)) if m.contains("row 7")),
            "{err:?}"
        );
        let mut out = vec![0u32; g.len()];
        checked_rows(
            (&g, 2, false),
            &g,
            |g, p| p.flat(g) as u32,
            &mut out,
            Some(9),
        )
        .unwrap();
        let expect: Vec<u32> = (0..120)
            .map(|i| if (3..117).contains(&i) { i } else { 9 })
            .collect();
        assert_eq!(out, expect);
    }

    #[test]
    fn a_panic_in_the_function_is_the_error() {
        let g = geometry([3, 3], [1, 1], [1, 1]);
        let mut out = vec![0u8; 9];
        let err = rows(
            &g,
            &(),
            |_, _| -> u8 { panic!("no value here") },
            &mut out,
            None,
        );
        assert!(
            matches!(&err, Err(KernelFault::Message(m)) if m.contains("no value here")),
            "{err:?}"
        );
    }
}
