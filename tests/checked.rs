//! Checked mode finds planted bugs: out-of-bounds indices, data races, divergent barriers,
//! reads of uninitialized shared memory and of array elements nothing has written, operands of
//! warpgroup products written while in flight, each with the
//! threads, element and source lines involved. (That it finds nothing wrong with correct kernels is shown by `tests/kernels.rs`,
//! which runs the whole kernel suite on `Device::cpu_checked()` too.)

use kernel_runtime::prelude::*;
use kernel_runtime::{Access, AccessKind, Finding, Origin, Reader};

mod common;
use common::assert_mentions;

const THIS_FILE: &str = file!();
/// This file's text, built in: the test binary also runs where the sources are not (a GPU
/// machine given only the binaries).
const THIS_SOURCE: &str = include_str!("checked.rs");

fn finding(result: Result<(), Error>) -> Finding {
    match result {
        Err(Error::CheckFailed { finding, .. }) => *finding,
        other => panic!("expected a finding, got {other:?}"),
    }
}

/// The line of an access, checked to be in this file.
fn line(access: &Access) -> u32 {
    let at = access.at.expect("the access has a source line");
    assert_eq!(at.file(), THIS_FILE);
    at.line()
}

/// The line of this file that holds `needle`, once.
fn line_of(needle: &str) -> u32 {
    let hits: Vec<usize> = THIS_SOURCE
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle) && !l.contains("line_of("))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(hits.len(), 1, "`{needle}` is on lines {hits:?}");
    hits[0] as u32
}

/// The fields of a data race, or a panic naming what was found instead.
fn race(f: &Finding) -> (&str, &[usize], &Access, &Access) {
    match f {
        Finding::DataRace {
            array,
            index,
            first,
            second,
        } => (array, index, first, second),
        _ => panic!("expected a data race, found: {f}"),
    }
}

/// The fields of an out-of-bounds access: array, index, shape, access.
fn oob(f: &Finding) -> (&str, &[usize], &[usize], &Access) {
    match f {
        Finding::OutOfBounds {
            array,
            index,
            shape,
            access,
        } => (array, index, shape, access),
        _ => panic!("expected an out-of-bounds access, found: {f}"),
    }
}

/// The fields of a read of uninitialized shared memory: array, index, access.
fn uninit(f: &Finding) -> (&str, &[usize], &Access) {
    match f {
        Finding::UninitializedSharedRead {
            array,
            index,
            access,
        } => (array, index, access),
        _ => panic!("expected a read of uninitialized shared memory, found: {f}"),
    }
}

const fn d(x: u32, y: u32, z: u32) -> Dim3 {
    Dim3::new(x, y, z)
}

// ---------------------------------------------------------------------------------------------
// Out-of-bounds accesses.

/// The previous element, with an index that goes below zero at `i = 0` (as `a[i - 1]` in
/// Python silently reads the last element). Index checks are off, as for speed.
#[kernel(boundscheck = false)]
fn previous(x: &[f32], out: &mut [f32]) {
    let i = grid(1);
    if i < out.len() {
        out[i] = x[(i as isize - 1) as usize]; // oob: negative
    }
}

/// The row above, with an index that goes below zero in row 0: written as a stencil is, with
/// `i - 1` in the index, which in a debug build would panic on its own.
#[kernel]
fn row_above(x: &Array2<f32>, out: &mut Array2<f32>) {
    let (j, i) = grid(2);
    let (n, m) = x.dim();
    if i < n && j < m {
        out[[i, j]] = x[[i - 1, j]]; // oob: row above
    }
}

/// A 3×3 stencil whose guard lets the last row through.
#[kernel]
fn stencil_last_row(x: &Array2<f32>, out: &mut Array2<f32>) {
    let (j, i) = grid(2);
    let (n, m) = x.dim();
    if 1 <= i && i < n && 1 <= j && j + 1 < m {
        out[[i, j]] = x[[i + 1, j]] + x[[i - 1, j]]; // oob: row n
    }
}

/// A shared tile one element short: the last thread stores past its end.
#[kernel]
fn tile_short(out: &mut [u32]) {
    let t = thread_idx().x as usize;
    let mut tile = shared_array![u32; 31];
    tile[t] = t as u32; // oob: tile
    sync_threads();
    out[t] = tile[30 - t % 31];
}

#[test]
fn out_of_bounds_accesses_name_the_array_element_thread_and_line() {
    let dev = Device::cpu_checked();

    let x = dev.to_device(&[1.0f32; 100][..]).unwrap();
    let mut out = dev.zeros::<f32, _>(100).unwrap();
    let f = finding(previous.launch(4, 32, (&x, &mut out)));
    let (array, index, shape, access) = oob(&f);
    assert_eq!((array, index, shape), ("x", &[usize::MAX][..], &[100][..]));
    assert_eq!(
        (access.block, access.thread, access.kind),
        (d(0, 0, 0), d(0, 0, 0), AccessKind::Read)
    );
    assert_eq!(line(access), line_of("// oob: negative"));
    let msg = f.to_string();
    assert_mentions(
        &msg,
        &[
            "`x[-1]`",
            "negative index",
            "shape [100]",
            "thread (0, 0, 0) of block (0, 0, 0) read it",
        ],
    );

    // An index that underflows is a bad index like any other, in debug builds too.
    let img = dev
        .to_device(&ndarray::Array2::<f32>::zeros((4, 4)))
        .unwrap();
    let mut above = dev.zeros::<f32, _>((4, 4)).unwrap();
    let f = finding(row_above.launch(1, (4, 4), (&img, &mut above)));
    let (array, index, _, access) = oob(&f);
    assert_eq!((array, index), ("x", &[usize::MAX, 0][..]));
    assert_eq!(line(access), line_of("// oob: row above"));
    assert_mentions(&f.to_string(), &["`x[[-1, 0]]`", "negative index"]);
    let fast = Device::cpu();
    let img = fast
        .to_device(&ndarray::Array2::<f32>::zeros((4, 4)))
        .unwrap();
    let mut above = fast.zeros::<f32, _>((4, 4)).unwrap();
    let msg = row_above
        .launch(1, (4, 4), (&img, &mut above))
        .unwrap_err()
        .to_string();
    assert_mentions(&msg, &["row_above", "`x", "-1", "tests/checked.rs"]);

    // 20 × 8 image, one column of 8 × 8 blocks, so that only block (0, 2) reaches row 19: its
    // first thread there is thread (1, 3).
    let x = dev
        .to_device(&ndarray::Array2::<f32>::zeros((20, 8)))
        .unwrap();
    let mut out = dev.zeros::<f32, _>((20, 8)).unwrap();
    let f = finding(stencil_last_row.launch((1, 3), (8, 8), (&x, &mut out)));
    let (array, index, shape, access) = oob(&f);
    assert_eq!((array, index, shape), ("x", &[20, 1][..], &[20, 8][..]));
    assert_eq!((access.block, access.thread), (d(0, 2, 0), d(1, 3, 0)));
    assert_eq!(line(access), line_of("// oob: row n"));

    let mut out = dev.zeros::<u32, _>(32).unwrap();
    let f = finding(tile_short.launch(2, 32, &mut out));
    let (array, index, _, access) = oob(&f);
    assert_eq!(
        (array, index, access.kind),
        ("tile", &[31][..], AccessKind::Write)
    );
    assert_eq!(access.thread, d(31, 0, 0));
    assert_eq!(line(access), line_of("// oob: tile"));
}

// ---------------------------------------------------------------------------------------------
// Data races.

/// Every thread adds one to `count[0]` with a plain `+=`: on the CPU without checks, and in
/// Numba's simulator, the count comes out right, and the race stays invisible.
#[kernel]
fn count_plain(count: &mut [u32]) {
    count[0] += 1; // race: count
}

/// The same count with an atomic: no race.
#[kernel]
fn count_atomic(count: &mut [u32]) {
    atomic_add(&count, 0, 1);
}

/// Thread 0 of every block stores its block's number in one element.
#[kernel]
fn last_block_wins(out: &mut [u32]) {
    if thread_idx().x == 0 {
        out[0] = block_idx().x; // race: blocks
    }
}

/// The second warp's lanes read an element that thread 70, of the third warp, then writes; the
/// collective makes the block keep warp clocks, so the reads are kept as one group of lanes.
#[kernel]
fn later_warps_race(out: &mut [u32]) {
    let t = thread_idx().x;
    syncwarp(0xffff_ffff);
    let mut v = 0;
    if (32..64).contains(&t) {
        v = out[0]; // race: warp reads
    }
    if t == 70 {
        out[0] = v + 1; // race: later write
    }
}

/// Shifts an array left in place: thread `i` reads element `i + 1`, which thread `i + 1`
/// writes, with nothing ordering the two.
#[kernel]
fn shift_in_place(a: &mut [i32]) {
    let i = grid(1);
    if i + 1 < a.len() {
        let next = a[i + 1]; // race: shift read
        a[i] = next; // race: shift write
    }
}

/// Every row of the grid writes row 0 of `out`: threads of different rows race. The guarded
/// statement writes at an index the span proves, so checked mode records the write for a whole
/// span of each row at once.
#[kernel]
fn every_row_writes_row_zero(x: &Array2<f32>, out: &mut Array2<f32>) {
    let (j, i) = grid(2);
    let (n, m) = x.dim();
    if i < n && j < m {
        out[[0, j]] = x[[i, j]]; // race: row zero
    }
}

/// Every thread writes the same element.
#[kernel]
fn one_element_for_all(x: &[f32], total: &mut [f32]) {
    let i = grid(1);
    if i < x.len() {
        total[0] = x[i]; // race: one element
    }
}

/// Each thread writes its own element, then its right neighbour's.
#[kernel]
fn neighbours_overlap(out: &mut [f32]) {
    let j = grid(1);
    if j + 1 < out.len() {
        out[j] = 1.0; // race: own element
        out[j + 1] = 2.0; // race: neighbour's element
    }
}

/// Each thread adds one to its own element and to its right neighbour's.
#[kernel]
fn neighbours_add(out: &mut [u32]) {
    let j = grid(1);
    if j + 1 < out.len() {
        out[j] += 1; // race: own sum
        out[j + 1] += 1; // race: neighbour's sum
    }
}

/// A write that only the threads of positive elements make: checked thread by thread.
#[kernel]
fn positive_ones_write_first(x: &[f32], out: &mut [f32]) {
    let j = grid(1);
    if j < x.len() {
        if x[j] > 0.0 {
            out[0] = x[j]; // race: some threads
        }
    }
}

/// A pairwise sum in shared memory with the barrier between reading the partner and writing
/// one's own slot left out.
#[kernel]
fn pair_sum_missing_barrier(x: &[f32], out: &mut [f32]) {
    let t = thread_idx().x as usize;
    let i = grid(1);
    let mut s = shared_array![f32; 64];
    s[t] = x[i]; // race: shared write
    sync_threads();
    let partner = s[t ^ 1]; // race: shared read
    s[t] += partner;
    sync_threads();
    out[i] = s[t];
}

/// Atomic updates of a global counter, then a plain read of it in the same launch.
#[kernel]
fn atomic_then_plain_read(counter: &mut [u32], out: &mut [u32]) {
    let t = thread_idx().x as usize;
    atomic_add(&counter, 0, 1); // race: atomic
    sync_threads();
    if t == 0 {
        out[block_idx().x as usize] = counter[0]; // race: plain read
    }
}

#[test]
fn data_races_name_both_threads_the_element_and_which_came_first() {
    let dev = Device::cpu_checked();

    // 256 threads in one block: the second thread's update races with the first's.
    let mut count = dev.zeros::<u32, _>(1).unwrap();
    let f = finding(count_plain.launch(1, 256, &mut count));
    let (array, index, first, second) = race(&f);
    assert_eq!((array, index), ("count", &[0][..]));
    assert_eq!((first.thread, first.kind), (d(0, 0, 0), AccessKind::Write));
    assert_eq!((second.thread, second.kind), (d(1, 0, 0), AccessKind::Read));
    assert_eq!(first.block, second.block);
    assert_eq!(
        (line(first), line(second)),
        (line_of("// race: count"), line_of("// race: count"))
    );
    let msg = f.to_string();
    assert_mentions(
        &msg,
        &[
            "data race on `count[0]`",
            "thread (0, 0, 0) of block (0, 0, 0) wrote it",
            "then thread (1, 0, 0) of block (0, 0, 0) read it",
            "no sync_threads() (nor, for lanes of one warp, a syncwarp() of both) between",
        ],
    );
    // The fast backend gives the "right" count, hiding the race; atomics are the fix.
    let mut count = Device::cpu().zeros::<u32, _>(1).unwrap();
    count_plain.launch(1, 256, &mut count).unwrap();
    assert_eq!(count.to_vec().unwrap(), [256]);
    let mut count = dev.zeros::<u32, _>(1).unwrap();
    count_atomic.launch(8, 256, &mut count).unwrap();
    assert_eq!(count.to_vec().unwrap(), [2048]);

    // Blocks are never ordered: two blocks' writes race whichever runs first.
    let mut out = dev.zeros::<u32, _>(1).unwrap();
    let f = finding(last_block_wins.launch(2, 32, &mut out));
    let (array, index, first, second) = race(&f);
    assert_eq!((array, index), ("out", &[0][..]));
    let mut blocks = [first.block, second.block];
    blocks.sort_by_key(|b| b.x);
    assert_eq!(blocks, [d(0, 0, 0), d(1, 0, 0)]);
    assert_eq!((first.thread, second.thread), (d(0, 0, 0), d(0, 0, 0)));
    assert_eq!(
        (first.kind, second.kind),
        (AccessKind::Write, AccessKind::Write)
    );
    assert!(
        f.to_string()
            .contains("threads of different blocks are not ordered"),
        "{f}"
    );
    assert_eq!(line(second), line_of("// race: blocks"));

    // Threads of warps after the first are named by their own numbers.
    let mut out = dev.zeros::<u32, _>(1).unwrap();
    let f = finding(later_warps_race.launch(1, 96, &mut out));
    let (_, _, first, second) = race(&f);
    assert_eq!((first.thread, second.thread), (d(32, 0, 0), d(70, 0, 0)));
    assert_eq!(
        (line(first), line(second)),
        (
            line_of("// race: warp reads"),
            line_of("// race: later write")
        )
    );

    // Read first, then written by its neighbour.
    let mut a = dev.to_device(&(0..64).collect::<Vec<i32>>()).unwrap();
    let f = finding(shift_in_place.launch(1, 64, &mut a));
    let (array, index, first, second) = race(&f);
    assert_eq!((array, index), ("a", &[1][..]));
    assert_eq!((first.thread, first.kind), (d(0, 0, 0), AccessKind::Read));
    assert_eq!(
        (second.thread, second.kind),
        (d(1, 0, 0), AccessKind::Write)
    );
    assert_eq!(
        (line(first), line(second)),
        (
            line_of("// race: shift read"),
            line_of("// race: shift write")
        )
    );

    // Grid-level kernels whose spans checked mode records at once: rows, one element, an
    // access of a neighbour; and a conditional write, checked thread by thread.
    let x = dev
        .to_device(&ndarray::Array2::<f32>::ones((4, 8)))
        .unwrap();
    let mut out = dev.zeros::<f32, _>((4, 8)).unwrap();
    let f = finding(every_row_writes_row_zero.launch(1, (8, 4), (&x, &mut out)));
    let (array, index, first, second) = race(&f);
    assert_eq!((array, index[0]), ("out", 0));
    assert_eq!(first.thread.x, index[1] as u32);
    assert_eq!(second.thread.x, index[1] as u32);
    assert_ne!(first.thread.y, second.thread.y);
    assert_eq!(
        (first.kind, second.kind),
        (AccessKind::Write, AccessKind::Write)
    );
    assert_eq!(
        (line(first), line(second)),
        (line_of("// race: row zero"), line_of("// race: row zero"))
    );

    let x = dev.to_device(&[1.0f32; 64][..]).unwrap();
    let mut total = dev.zeros::<f32, _>(1).unwrap();
    let f = finding(one_element_for_all.launch(1, 64, (&x, &mut total)));
    let (array, index, first, second) = race(&f);
    assert_eq!((array, index), ("total", &[0][..]));
    assert_eq!((first.thread, second.thread), (d(0, 0, 0), d(1, 0, 0)));
    assert_eq!(line(second), line_of("// race: one element"));

    let mut out = dev.zeros::<f32, _>(64).unwrap();
    let f = finding(neighbours_overlap.launch(1, 64, &mut out));
    let (array, index, first, second) = race(&f);
    assert_eq!((array, index), ("out", &[1][..]));
    assert_eq!((first.thread, second.thread), (d(1, 0, 0), d(0, 0, 0)));
    assert_eq!(
        (line(first), line(second)),
        (
            line_of("// race: own element"),
            line_of("// race: neighbour's element")
        )
    );

    // Compound assignments: a read, then a write, of each element.
    let mut sums = dev.zeros::<u32, _>(64).unwrap();
    let f = finding(neighbours_add.launch(1, 64, &mut sums));
    let (array, index, first, second) = race(&f);
    assert_eq!((array, index), ("out", &[1][..]));
    let mut threads = [first.thread.x, second.thread.x];
    threads.sort();
    assert_eq!(threads, [0, 1]);
    assert_eq!(
        (first.kind, second.kind),
        (AccessKind::Write, AccessKind::Read)
    );
    let lines = [line(first), line(second)];
    assert!(lines.contains(&line_of("// race: own sum")), "{f}");
    assert!(lines.contains(&line_of("// race: neighbour's sum")), "{f}");

    let mut out = dev.zeros::<f32, _>(1).unwrap();
    let f = finding(positive_ones_write_first.launch(1, 64, (&x, &mut out)));
    let (array, index, first, second) = race(&f);
    assert_eq!((array, index), ("out", &[0][..]));
    assert_eq!((first.thread, second.thread), (d(0, 0, 0), d(1, 0, 0)));
    assert_eq!(line(second), line_of("// race: some threads"));

    // Shared memory: thread 0 rewrites its slot before thread 1 has read it.
    let x = dev.to_device(&[1.0f32; 64][..]).unwrap();
    let mut out = dev.zeros::<f32, _>(64).unwrap();
    let f = finding(pair_sum_missing_barrier.launch(1, 64, (&x, &mut out)));
    let (array, index, first, second) = race(&f);
    assert_eq!((array, index), ("s", &[0][..]));
    assert_eq!((first.thread, first.kind), (d(0, 0, 0), AccessKind::Write));
    assert_eq!((second.thread, second.kind), (d(1, 0, 0), AccessKind::Read));
    assert_eq!(line(second), line_of("// race: shared read"));

    // Atomics from two blocks, then a plain read: the read races with the other block's atomic.
    let mut counter = dev.zeros::<u32, _>(1).unwrap();
    let mut out = dev.zeros::<u32, _>(2).unwrap();
    let f = finding(atomic_then_plain_read.launch(2, 32, (&mut counter, &mut out)));
    let (array, _, first, second) = race(&f);
    assert_eq!(array, "counter");
    let kinds = [first.kind, second.kind];
    assert!(
        kinds.contains(&AccessKind::Atomic) && kinds.contains(&AccessKind::Read),
        "{f}"
    );
    assert_ne!(first.block, second.block);
    // In one block the barrier orders the atomics before the read: no race.
    let mut counter = dev.zeros::<u32, _>(1).unwrap();
    let mut out = dev.zeros::<u32, _>(1).unwrap();
    atomic_then_plain_read
        .launch(1, 32, (&mut counter, &mut out))
        .unwrap();
    assert_eq!(out.to_vec().unwrap(), [32]);
}

// ---------------------------------------------------------------------------------------------
// Divergent barriers.

/// The first half of the block waits at a barrier the second half skips, then leaves: the
/// second half counts as arrived once it has exited.
#[kernel]
fn half_barrier(out: &mut [u32]) {
    let t = thread_idx().x as usize;
    if t < 16 {
        sync_threads(); // barrier: half
    }
    out[grid(1)] = 1;
}

/// Even and odd threads wait at two different barriers.
#[kernel]
fn two_barriers(out: &mut [u32]) {
    let t = thread_idx().x as usize;
    if t.is_multiple_of(2) {
        sync_threads(); // barrier: even
    } else {
        sync_threads(); // barrier: odd
    }
    out[grid(1)] = 1;
}

/// A loop holding a barrier, run a number of times that depends on the thread: the threads
/// whose loop ends first leave, and count as arrived at the others' barriers.
#[kernel]
fn uneven_loop(out: &mut [u32]) {
    let t = thread_idx().x;
    let mut k = 0;
    while k < 1 + t / 8 {
        sync_threads(); // barrier: loop
        k += 1;
    }
    out[grid(1)] = k;
}

#[test]
fn divergent_barriers_name_the_barrier_and_a_live_thread_elsewhere() {
    let dev = Device::cpu_checked();
    let mut out = dev.zeros::<u32, _>(64).unwrap();

    // Threads that leave before a barrier count as arrived, as on a GPU.
    half_barrier.launch(2, 32, &mut out).unwrap();
    assert_eq!(out.to_vec().unwrap(), [1; 64]);
    uneven_loop.launch(1, 32, &mut out).unwrap();

    let f = finding(two_barriers.launch(1, 32, &mut out));
    let Finding::DivergentBarrier {
        waiting,
        other,
        barrier,
        ..
    } = &f
    else {
        panic!("{f}")
    };
    assert_eq!((*waiting, other.0), (d(0, 0, 0), d(1, 0, 0)));
    assert!(
        barrier.contains(&format!(":{}:", line_of("// barrier: even"))),
        "{f}"
    );
    assert!(
        other
            .1
            .contains(&format!(":{}:", line_of("// barrier: odd"))),
        "{f}"
    );
    // The fast backend lets barriers of one kind meet wherever they are, as older GPUs did.
    let mut fast = Device::cpu().zeros::<u32, _>(32).unwrap();
    two_barriers.launch(1, 32, &mut fast).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Reads of uninitialized shared memory.

/// Accumulates into a shared slot per thread that nobody cleared (`+=` reads it first).
#[kernel]
fn accumulate_uncleared(x: &[f32], out: &mut [f32]) {
    let t = thread_idx().x as usize;
    let i = grid(1);
    let mut s = shared_array![f32; 32];
    s[t] += x[i]; // uninit: accumulate
    out[i] = s[t];
}

/// A halo of one element that no thread loads: the last thread reads it.
#[kernel]
fn missing_halo(x: &[f32], out: &mut [f32]) {
    let t = thread_idx().x as usize;
    let i = grid(1);
    let mut s = shared_array![f32; 33];
    s[t] = x[i];
    sync_threads();
    out[i] = s[t] + s[t + 1]; // uninit: halo
}

/// An atomic counter in shared memory that is never set to zero.
#[kernel]
fn uncleared_counter(out: &mut [u32]) {
    let c = shared_array![u32; 1];
    atomic_add(&c, 0, 1); // uninit: counter
    sync_threads();
    out[grid(1)] = c[0];
}

/// A tree reduction missing the barrier after its load: thread 0 adds `s[32]` before thread 32
/// has stored it. On a GPU that is a race, not a read of memory nobody writes.
#[kernel]
fn sum_without_load_barrier(x: &[f32], sums: &mut [f32]) {
    let t = thread_idx().x as usize;
    let mut s = shared_array![f32; 64];
    s[t] = x[grid(1)]; // race: load
    let mut stride = 32;
    while stride > 0 {
        if t < stride {
            s[t] += s[t + stride]; // race: add
        }
        sync_threads();
        stride /= 2;
    }
    if t == 0 {
        sums[block_idx().x as usize] = s[0];
    }
}

/// Thread 0 reads the corner of a 2-D table while thread 1 adds to it atomically: a plain read
/// and an atomic of two threads race.
#[kernel]
fn peek_while_adding(counts: &mut Array2<u32>, out: &mut [u32]) {
    let t = thread_idx().x as usize;
    if t == 0 {
        out[0] = counts[[0, 0]]; // race: peek
    }
    if t == 1 {
        atomic_add(&counts, [0, 0], 1); // race: atomic add
    }
}

#[test]
fn a_plain_read_of_a_2d_array_races_with_an_atomic() {
    let dev = Device::cpu_checked();
    let mut counts = dev.zeros::<u32, _>((2, 2)).unwrap();
    let mut out = dev.zeros::<u32, _>(1).unwrap();
    let f = finding(peek_while_adding.launch(1, 2, (&mut counts, &mut out)));
    let (array, index, first, second) = race(&f);
    assert_eq!((array, index), ("counts", &[0, 0][..]));
    assert_eq!(
        (first.thread, first.kind, line(first)),
        (d(0, 0, 0), AccessKind::Read, line_of("// race: peek"))
    );
    assert_eq!(
        (second.thread, second.kind, line(second)),
        (
            d(1, 0, 0),
            AccessKind::Atomic,
            line_of("// race: atomic add")
        )
    );
}

/// Writes the first byte.
#[kernel]
fn touch_first(x: &mut [u8]) {
    if grid(1) == 0 {
        x[0] = 1;
    }
}

/// The host's memory and swap, in bytes (`/proc/meminfo`; 64 GiB where there is none).
fn host_bytes() -> usize {
    let info = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let kib = |field: &str| -> Option<usize> {
        let line = info.lines().find(|l| l.starts_with(field))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    match (kib("MemTotal:"), kib("SwapTotal:")) {
        (Some(mem), swap) => (mem + swap.unwrap_or(0)) * 1024,
        (None, _) => 64 << 30,
    }
}

#[test]
fn a_shadow_the_host_cannot_allocate_is_an_error() {
    // Zeros cost nothing until touched: half the host's memory and swap is given. Their shadow,
    // tens of bytes an element, is more than the host has, whether it overcommits or not.
    let dev = Device::cpu_checked();
    let mut big = dev.zeros::<u8, _>(host_bytes() / 2).unwrap();
    let err = touch_first
        .launch(1, 32, &mut big)
        .expect_err("checked mode refuses a shadow the host cannot give");
    assert!(matches!(err, Error::KernelFault { .. }), "{err:?}");
    assert_mentions(
        &err.to_string(),
        &[
            "checked mode cannot allocate the shadow",
            "array `x`",
            "Device::cpu()",
        ],
    );
}

#[test]
fn a_shared_read_before_another_threads_write_is_a_race() {
    let dev = Device::cpu_checked();
    let x = dev.to_device(&[1.0f32; 64][..]).unwrap();
    let mut sums = dev.zeros::<f32, _>(1).unwrap();
    let f = finding(sum_without_load_barrier.launch(1, 64, (&x, &mut sums)));
    let (array, index, first, second) = race(&f);
    assert_eq!((array, index), ("s", &[32][..]));
    assert_eq!(
        (first.thread, first.kind, line(first)),
        (d(0, 0, 0), AccessKind::Read, line_of("// race: add"))
    );
    assert_eq!(
        (second.thread, second.kind, line(second)),
        (d(32, 0, 0), AccessKind::Write, line_of("// race: load"))
    );
}

/// Thread 1 reads the row that thread 0's asynchronous copy writes, waiting for its own copies
/// only: the copy's writes are thread 0's, and no barrier orders them before the read.
#[kernel]
fn async_copy_read_without_barrier(x: &Array2<f32>, out: &mut [f32]) {
    use kernel_runtime::pipeline::*;
    let t = thread_idx().x as usize;
    let mut tile = shared_array![f32; [2, 4]];
    memcpy_async::<f32, 4>(&mut tile, [t, 0], &x, [t, 0], 4); // race: copy
    pipeline_commit();
    pipeline_wait_prior::<0>();
    out[t] = tile[[1 - t, 2]]; // race: read
}

#[test]
fn an_async_copy_races_with_a_read_that_no_barrier_orders_after_it() {
    let dev = Device::cpu_checked();
    let x = dev.to_device(&Array2::<f32>::ones((2, 4))).unwrap();
    let mut out = dev.zeros::<f32, _>(2).unwrap();
    let f = finding(async_copy_read_without_barrier.launch(1, 2, (&x, &mut out)));
    let (array, index, first, second) = race(&f);
    assert_eq!((array, index), ("tile", &[1, 2][..]));
    assert_eq!(
        (first.thread, first.kind, line(first)),
        (d(0, 0, 0), AccessKind::Read, line_of("// race: read"))
    );
    assert_eq!(
        (second.thread, second.kind, line(second)),
        (d(1, 0, 0), AccessKind::Write, line_of("// race: copy"))
    );
}

/// A shared `bool` read before any thread wrote it.
#[kernel]
fn unset_flag(out: &mut [u32]) {
    let t = thread_idx().x as usize;
    let flags = shared_array![bool; 32];
    let set = flags[t]; // uninit: flag
    if set {
        out[t] = 1;
    }
}

#[test]
fn reads_of_shared_memory_never_written_name_the_element_and_thread() {
    let dev = Device::cpu_checked();
    let x = dev.to_device(&[1.0f32; 64][..]).unwrap();
    let mut out = dev.zeros::<f32, _>(64).unwrap();

    // One block: blocks run in parallel, and each of several would have this bug.
    let f = finding(accumulate_uncleared.launch(1, 32, (&x, &mut out)));
    let (array, index, access) = uninit(&f);
    assert_eq!((array, index), ("s", &[0][..]));
    assert_eq!(
        (access.block, access.thread, access.kind),
        (d(0, 0, 0), d(0, 0, 0), AccessKind::Read)
    );
    assert_eq!(line(access), line_of("// uninit: accumulate"));
    assert!(
        f.to_string()
            .contains("no thread of the block had written it"),
        "{f}"
    );

    let f = finding(missing_halo.launch(2, 32, (&x, &mut out)));
    let (array, index, access) = uninit(&f);
    assert_eq!((array, index, access.thread), ("s", &[32][..], d(31, 0, 0)));
    assert_eq!(line(access), line_of("// uninit: halo"));

    let mut out = dev.zeros::<u32, _>(64).unwrap();
    let f = finding(uncleared_counter.launch(2, 32, &mut out));
    let (array, _, access) = uninit(&f);
    assert_eq!(
        (array, access.kind, access.thread),
        ("c", AccessKind::Atomic, d(0, 0, 0))
    );
    assert_eq!(line(access), line_of("// uninit: counter"));

    // A shared `bool` reads as one of its two values whatever its byte holds; checked mode
    // reports the read all the same.
    let f = finding(unset_flag.launch(1, 32, &mut out));
    let (array, index, access) = uninit(&f);
    assert_eq!(
        (array, index, access.thread),
        ("flags", &[0][..], d(0, 0, 0))
    );
    assert_eq!(line(access), line_of("// uninit: flag"));
}

/// A device function's shared array: each thread adds its element into its neighbour's in the
/// phase where the neighbour reads its own (a race); or reads an element no thread wrote.
#[device]
fn device_neighbours(v: f32, write: bool) -> f32 {
    let t = thread_idx().x as usize;
    let mut s = shared_array![f32; 32];
    if write {
        s[t] = v;
        sync_threads();
        s[(t + 1) % 32] += s[t]; // race: device
    }
    sync_threads();
    s[t] // uninit: device
}

#[kernel(barriers)]
fn calls_device_neighbours(x: &[f32], write: u32, out: &mut [f32]) {
    let i = grid(1);
    out[i] = device_neighbours(x[i], write != 0);
}

#[test]
fn device_functions_shared_arrays_are_checked_as_the_kernels_own() {
    let dev = Device::cpu_checked();
    let x = dev.to_device(&[1.0f32; 32][..]).unwrap();
    let mut out = dev.zeros::<f32, _>(32).unwrap();
    let f = finding(calls_device_neighbours.launch(1, 32, (&x, 1, &mut out)));
    let (array, _, first, second) = race(&f);
    assert_eq!(array, "s", "{f}");
    assert!(
        [first, second]
            .iter()
            .any(|a| line(a) == line_of("// race: device")),
        "{f}"
    );
    let f = finding(calls_device_neighbours.launch(1, 32, (&x, 0, &mut out)));
    let (array, index, access) = uninit(&f);
    assert_eq!((array, index), ("s", &[0][..]), "{f}");
    assert_eq!(line(access), line_of("// uninit: device"));
}

#[test]
fn checked_mode_is_chosen_by_the_environment_and_its_arrays_stay_its_own() {
    assert!(Device::cpu_checked().is_checked() && !Device::cpu().is_checked());
    assert!(Device::cpu_checked().name().contains("checked"));
    // An array of the fast CPU backend is not silently checked.
    let mut out = Device::cpu().zeros::<u32, _>(1).unwrap();
    let err = count_plain
        .launch_with(
            LaunchConfig::new(1, 1).unwrap().on(&Device::cpu_checked()),
            &mut out,
        )
        .unwrap_err();
    assert!(matches!(err, Error::DeviceMismatch { .. }), "{err}");
}

/// Thread 0 resets the counter with a plain store while every thread counts atomically.
#[kernel]
fn reset_while_counting(count: &mut [u32]) {
    if thread_idx().x == 0 {
        count[0] = 0; // the plain store
    }
    atomic_add(&count, 0, 1);
}

#[test]
fn an_atomic_beside_a_plain_store_is_a_race() {
    let dev = Device::cpu_checked();
    let mut count = dev.zeros::<u32, _>(1).unwrap();
    let f = finding(reset_while_counting.launch(1, 32, &mut count));
    let (array, index, first, second) = race(&f);
    assert_eq!((array, index), ("count", &[0][..]), "{f}");
    assert_eq!(first.kind, AccessKind::Write, "{f}");
    assert_eq!(
        line(first),
        line_of("count[0] = 0; // the plain store"),
        "{f}"
    );
    assert_eq!(second.kind, AccessKind::Atomic, "{f}");
}

// ---------------------------------------------------------------------------------------------
// Reads of array elements that nothing has written.

/// The sum of a point's 3 × 3 box.
#[stencil]
fn box3(x: &Array2<f32>) -> f32 {
    let corner = x[[-1, -1]]; // unwritten: box corner
    let rest = x[[-1, 0]] + x[[-1, 1]] + x[[0, -1]] + x[[0, 0]] + x[[0, 1]];
    corner + rest + x[[1, -1]] + x[[1, 0]] + x[[1, 1]]
}

/// The 5-point cross of a point: no corner of its box.
#[stencil]
fn cross(x: &Array2<f32>) -> f32 {
    let up = x[[-1, 0]]; // unwritten: cross up
    up + x[[0, -1]] + x[[0, 0]] + x[[0, 1]] + x[[1, 0]]
}

/// The sum of a point's diagonal neighbours, zero on the border.
#[stencil(cval = 0.0)]
fn diagonals(x: &Array2<f32>) -> f32 {
    x[[-1, -1]] + x[[-1, 1]] + x[[1, -1]] + x[[1, 1]]
}

/// Each column's sum.
#[kernel]
fn column_sums(x: &Array2<f32>, out: &mut [f32]) {
    let j = grid(1);
    if j < out.len() {
        let mut s = 0.0;
        for i in 0..x.dim().0 {
            s += x[[i, j]]; // unwritten: column read
        }
        out[j] = s;
    }
}

/// The fields of a read of an unwritten element: array, index, reader, origin.
fn unwritten(f: &Finding) -> (&str, &[usize], &Reader, Origin) {
    match f {
        Finding::UnwrittenRead {
            array,
            index,
            reader,
            origin,
        } => (array, index, reader, *origin),
        _ => panic!("expected a read of an unwritten element, found: {f}"),
    }
}

/// A 5 × 6 array of distinct values.
fn values() -> Array2<f32> {
    Array2::from_shape_fn((5, 6), |(i, j)| (i * 6 + j) as f32)
}

/// [`values`] on `dev`, and `box3` applied to it into an array from `empty`: its border, which
/// `box3` leaves unwritten, still marked.
fn box3_into_empty(
    dev: &Device,
) -> (
    DeviceArray<f32, ndarray::Ix2>,
    DeviceArray<f32, ndarray::Ix2>,
) {
    let x = dev.to_device(&values()).unwrap();
    let mut once = dev.empty::<f32, _>((5, 6)).unwrap();
    box3.apply(&x, &mut once).unwrap();
    (x, once)
}

#[test]
fn a_stencil_that_reads_a_border_another_left_unwritten_is_reported_at_the_read() {
    let dev = Device::cpu_checked();
    let (x, once) = box3_into_empty(&dev);
    let mut twice = dev.zeros::<f32, _>((5, 6)).unwrap();
    let f = finding(cross.apply(&once, &mut twice));
    let (array, index, reader, origin) = unwritten(&f);
    // The first point in order, (1, 1), reads (0, 1) first: row 0 is `box3`'s border.
    assert_eq!((array, index), ("x", &[0, 1][..]));
    assert_eq!(origin, Origin::Border("box3"));
    let Reader::Stencil { point, at } = reader else {
        panic!("a stencil's read: {f}")
    };
    assert_eq!((point.as_slice(), at.file()), (&[1, 1][..], THIS_FILE));
    assert_eq!(at.line(), line_of("unwritten: cross up"));
    assert_mentions(
        &f.to_string(),
        &["`x[[0, 1]]`", "stencil `box3` left unwritten", "`cval`"],
    );
    // A border that `run` (zeros) or a `cval` fills, or the fast backend, reports nothing.
    let filled = box3.run(&x).unwrap();
    cross.apply(&filled, &mut twice).unwrap();
    let mut padded = dev.empty::<f32, _>((5, 6)).unwrap();
    diagonals.apply(&x, &mut padded).unwrap();
    cross.apply(&padded, &mut twice).unwrap();
    let (_, once) = box3_into_empty(&Device::cpu());
    cross.run(&once).unwrap();
}

#[test]
fn stencils_on_views_are_checked_in_the_views_own_indices() {
    let dev = Device::cpu_checked();
    let x = dev.to_device(&values()).unwrap();
    // `box3` into rows 1..5 of an array from `empty`: the view's border (its rows 0 and 3,
    // the array's 1 and 4, and its side columns) stays unwritten, row 0 too, untouched.
    let mut once = dev.empty::<f32, _>((5, 6)).unwrap();
    box3.apply(x.slice(0..4).unwrap(), once.slice_mut(1..5).unwrap())
        .unwrap();
    // `cross` over rows 1..4 reads its view's row 0 (the array's row 1) at its point (1, 1).
    let mut out = dev.zeros::<f32, _>((3, 6)).unwrap();
    let f = finding(cross.apply(once.slice(1..4).unwrap(), &mut out));
    let (array, index, _, origin) = unwritten(&f);
    assert_eq!((array, index), ("x", &[0, 1][..]), "{f}");
    assert_eq!(origin, Origin::Border("box3"));
    // Rows 2..5 start on the interior `box3` wrote: the first unwritten read is the side
    // column (1, 0) at point (1, 1), `cross`'s left neighbour.
    let f = finding(cross.apply(once.slice(2..5).unwrap(), &mut out));
    let (_, index, _, _) = unwritten(&f);
    assert_eq!(index, &[1, 0][..], "{f}");
    // A `cval` writes the view's border too: then the same reads pass.
    let mut filled = dev.empty::<f32, _>((5, 6)).unwrap();
    diagonals
        .apply(x.slice(0..4).unwrap(), filled.slice_mut(1..5).unwrap())
        .unwrap();
    cross.apply(filled.slice(1..4).unwrap(), &mut out).unwrap();
    let f = finding(cross.apply(filled.slice(0..3).unwrap(), &mut out));
    assert_eq!(unwritten(&f).1, &[0, 1][..], "{f}");
}

#[test]
fn reads_are_checked_element_by_element_not_by_the_neighbourhood_box() {
    let dev = Device::cpu_checked();
    let v = values();
    let (n, m) = v.dim();
    // Every element written but the four corners, which a cross never reads.
    let mut y = dev.empty::<f32, _>((n, m)).unwrap();
    for i in 0..n {
        let (from, to) = if i == 0 || i == n - 1 {
            (1, m - 1)
        } else {
            (0, m)
        };
        let row = v.row(i);
        y.copy_from_host_at(i * m + from, &row.as_slice().unwrap()[from..to])
            .unwrap();
    }
    let crossed = cross.run(&y).unwrap().to_host().unwrap();
    assert_eq!(crossed[[1, 1]], 5.0 * v[[1, 1]]);
    // The box reads corner (0, 0) at point (1, 1), which nothing wrote since `empty`.
    let f = finding(box3.run(&y).map(drop));
    let (array, index, reader, origin) = unwritten(&f);
    assert_eq!((array, index, origin), ("x", &[0, 0][..], Origin::Empty));
    assert!(
        matches!(reader, Reader::Stencil { point, at } if point == &[1, 1] && at.line() == line_of("unwritten: box corner")),
        "{f}"
    );
}

#[test]
fn a_kernel_that_reads_a_border_a_stencil_left_unwritten_is_reported_at_the_read() {
    let dev = Device::cpu_checked();
    let (_, once) = box3_into_empty(&dev);
    let mut sums = dev.zeros::<f32, _>(6).unwrap();
    // A copy on the device keeps what is unwritten.
    let copy = once.try_clone().unwrap();
    for array in [&once, &copy] {
        let f = finding(column_sums.launch(1, 32, (array, &mut sums)));
        let (name, index, reader, origin) = unwritten(&f);
        assert_eq!((name, index[0], origin), ("x", 0, Origin::Border("box3")));
        let Reader::Thread(access) = reader else {
            panic!("a thread's read: {f}")
        };
        assert_eq!(access.kind, AccessKind::Read);
        assert_eq!(line(access), line_of("unwritten: column read"));
    }
    // Once the border is written, the sums run.
    let mut once = once;
    for i in [0, 4] {
        once.copy_from_host_at(i * 6, &[1.0; 6]).unwrap();
    }
    for i in 1..4 {
        once.copy_from_host_at(i * 6, &[1.0]).unwrap();
        once.copy_from_host_at(i * 6 + 5, &[1.0]).unwrap();
    }
    column_sums.launch(1, 32, (&once, &mut sums)).unwrap();
}

/// Writes the even elements alone.
#[kernel]
fn evens(y: &mut [f32]) {
    let i = grid(1);
    if i < y.len() && i % 2 == 0 {
        y[i] = i as f32;
    }
}

/// Adds `x` into `y`: a read of `y` first.
#[kernel]
fn accumulate_into(x: &[f32], y: &mut [f32]) {
    let i = grid(1);
    if i < y.len() {
        y[i] += x[i]; // unwritten: accumulate
    }
}

/// Reads each element of `y` after writing it, and its neighbour's, which may be unwritten.
#[kernel]
fn write_then_read(y: &mut [f32], out: &mut [f32]) {
    let i = grid(1);
    if i < y.len() {
        y[i] = 1.0;
        let own = y[i];
        out[i] = own;
    }
}

#[test]
fn elements_a_launch_left_unwritten_stay_so_for_the_next() {
    let dev = Device::cpu_checked();
    let mut y = dev.empty::<f32, _>(64).unwrap();
    evens.launch(2, 32, &mut y).unwrap();
    let x = dev.zeros::<f32, _>(64).unwrap();
    // The odd elements are still unwritten: a read of one through a read-only view is reported.
    let mut sums = dev.zeros::<f32, _>(64).unwrap();
    let f = finding(accumulate_into.launch(2, 32, (&y, &mut sums)));
    let (array, index, _, origin) = unwritten(&f);
    assert_eq!((array, index[0] % 2, origin), ("x", 1, Origin::Empty));
    // A read-modify-write of an element nothing wrote is reported at the `+=`.
    let mut fresh = dev.empty::<f32, _>(64).unwrap();
    let f = finding(accumulate_into.launch(2, 32, (&x, &mut fresh)));
    let (array, _, reader, origin) = unwritten(&f);
    assert_eq!((array, origin), ("y", Origin::Empty));
    let Reader::Thread(access) = reader else {
        panic!("a thread's read: {f}")
    };
    assert_eq!(line(access), line_of("unwritten: accumulate"));
    // An element written earlier in the same launch reads as written, and the launch's writes
    // count for the next launch.
    let mut fresh = dev.empty::<f32, _>(64).unwrap();
    let mut out = dev.zeros::<f32, _>(64).unwrap();
    write_then_read
        .launch(2, 32, (&mut fresh, &mut out))
        .unwrap();
    accumulate_into.launch(2, 32, (&fresh, &mut out)).unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![2.0; 64]);
}

/// `a + b`, element by element.
#[vectorize]
fn plus(a: f32, b: f32) -> f32 {
    a + b
}

#[test]
fn an_element_wise_function_of_elements_nothing_wrote_is_reported() {
    let dev = Device::cpu_checked();
    let mut half = dev.empty::<f32, _>((3, 4)).unwrap();
    half.copy_from_host_at(0, &[1.0; 6]).unwrap();
    let ones = dev.to_device(&Array2::from_elem((3, 4), 1.0f32)).unwrap();
    // Every element of every input is read: the first one nothing wrote is reported.
    let f = finding(plus.call((&ones, &half)).map(drop));
    let (array, index, reader, origin) = unwritten(&f);
    assert_eq!((array, index, origin), ("b", &[1, 2][..], Origin::Empty));
    assert_eq!(reader, &Reader::Element);
    assert_mentions(&f.to_string(), &["`b[[1, 2]]`", "reads every element"]);
    // Written, it reads as any other.
    half.copy_from_host_at(6, &[2.0; 6]).unwrap();
    let sum = plus.call((&ones, &half)).unwrap().to_vec().unwrap();
    assert_eq!(sum, [[2.0; 6], [3.0; 6]].concat());
}

#[test]
fn a_generalized_ufunc_that_reads_elements_nothing_wrote_is_reported_at_the_read() {
    use kernel_suite::gufuncs::{dot, shift};
    let dev = Device::cpu_checked();
    let mut a = dev.empty::<f32, _>((4, 3)).unwrap();
    a.copy_from_host_at(0, &[1.0; 7]).unwrap();
    let ones = dev.to_device(&vec![1.0f32; 3]).unwrap();
    // Rows 0 and 1 are whole; row 2 has its first element: the read of its second is the one.
    let f = finding(dot.call((&a, &ones)).map(drop));
    let (array, index, reader, origin) = unwritten(&f);
    assert_eq!((array, index, origin), ("a", &[1][..], Origin::Empty));
    let Reader::LoopIndex { loop_index, at } = reader else {
        panic!("a read in a core: {f}")
    };
    assert_eq!(*loop_index, 2);
    assert!(at.file().ends_with("gufuncs.rs"), "{f}");
    assert_mentions(&f.to_string(), &["`a[1]`", "loop index 2"]);
    // A `()` input is read at every loop index.
    let x = dev.zeros::<f64, _>((3, 2)).unwrap();
    let mut y = dev.empty::<f64, _>(3).unwrap();
    y.copy_from_host_at(0, &[1.0, 2.0]).unwrap();
    let f = finding(shift.call((&x, &y)).map(drop));
    assert_eq!(unwritten(&f).1, &[2][..]);
    // Written, both read as any other array.
    a.copy_from_host_at(7, &[1.0; 5]).unwrap();
    assert_eq!(dot.call((&a, &ones)).unwrap().to_vec().unwrap(), [3.0; 4]);
    y.copy_from_host_at(2, &[3.0]).unwrap();
    assert_eq!(
        shift.call((&x, &y)).unwrap().to_vec().unwrap(),
        [1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
    );
}

/// A 3-tap filter whose taps are an array indexed as usual.
#[stencil(standard_indexing = (taps))]
fn filter3(x: &[f32], taps: &[f32]) -> f32 {
    let last = taps[2]; // unwritten: last tap
    taps[0] * x[-1] + taps[1] * x[0] + last * x[1]
}

#[test]
fn a_stencils_arrays_indexed_as_usual_are_checked_too() {
    let dev = Device::cpu_checked();
    let x = dev.to_device(&[1.0f32; 8][..]).unwrap();
    let mut taps = dev.empty::<f32, _>(3).unwrap();
    taps.copy_from_host_at(0, &[0.25, 0.5]).unwrap();
    let f = finding(filter3.run((&x, &taps)).map(drop));
    let (array, index, reader, origin) = unwritten(&f);
    assert_eq!((array, index, origin), ("taps", &[2][..], Origin::Empty));
    assert!(
        matches!(reader, Reader::Stencil { point, at } if point == &[1] && at.line() == line_of("unwritten: last tap")),
        "{f}"
    );
    taps.copy_from_host_at(2, &[0.25]).unwrap();
    let filtered = filter3.run((&x, &taps)).unwrap().to_vec().unwrap();
    assert_eq!(filtered[1..7], [1.0; 6]);
    // As a view of part of a longer array: its elements 1..4 written, 4 not; the view's index
    // is the one reported.
    let mut longer = dev.empty::<f32, _>(6).unwrap();
    longer.copy_from_host_at(1, &[0.25, 0.5, 0.25]).unwrap();
    let viewed = filter3.run((&x, longer.slice(1..4).unwrap())).unwrap();
    assert_eq!(viewed.to_vec().unwrap()[1..7], [1.0; 6]);
    let f = finding(filter3.run((&x, longer.slice(2..5).unwrap())).map(drop));
    let (array, index, _, origin) = unwritten(&f);
    assert_eq!((array, index, origin), ("taps", &[2][..], Origin::Empty));
}

/// One warpgroup's product of a 64 × 16 tile of ones by a 16 × 8 tile of ones, which its
/// threads stage with plain stores, into `out` (64 × 8, each element 16), with the hazard
/// `hazard` planted (0: none).
#[kernel]
fn warpgroup_hazards(hazard: u32, out: &mut Array2<f32>) {
    use kernel_runtime::wgmma::*;
    let t = thread_idx().x as usize;
    let mut sa = shared_array![f16; [2 * 64, 8]];
    let mut sb = shared_array![f16; [16, 8]];
    if hazard != 3 {
        // 3: the product reads tiles that nothing wrote.
        for c in 0..8 {
            sa[[t, c]] = f16::ONE; // wgmma: stage
        }
        sb[[t / 8, t % 8]] = f16::ONE;
    }
    fence_shared();
    if hazard != 1 {
        // 1: no barrier between the staging and the product.
        sync_threads();
    }
    if hazard == 5 && t / 32 == 3 {
        // 5: a warp of the warpgroup returns.
        return;
    }
    let mut acc = WgAccumulator::<M64N8K16>::new();
    if hazard != 7 {
        // 7: no fence between the accumulator's writes and the product.
        fence();
    }
    if hazard == 4 && t / 32 >= 2 {
        // 4: half the warpgroup multiplies at another place.
        mma_async::<M64N8K16, f16, 64, 16>(&mut acc, &sa, 0, &sb, 0, false); // wgmma: apart
    } else {
        mma_async::<M64N8K16, f16, 64, 16>(&mut acc, &sa, 0, &sb, 0, false); // wgmma: product
    }
    commit_group();
    if hazard == 6 {
        // 6: the accumulator read while its product may still write it.
        acc.for_each(t, |at, x| out[at] = *x); // wgmma: early
    }
    sync_threads();
    if hazard == 2 {
        // 2: an operand written while the product may still read it, after a barrier.
        sa[[t, 0]] = f16::ZERO; // wgmma: overwrite
    }
    wait_group::<0>();
    acc.for_each(t, |at, x| out[at] = *x);
}

#[test]
fn warpgroup_products_in_flight_and_apart_are_reported() {
    let dev = Device::cpu_checked();
    let run = |hazard| {
        let mut out = dev.zeros::<f32, _>((64, 8)).unwrap();
        warpgroup_hazards.launch(1, 128, (hazard, &mut out))?;
        out.to_host()
    };
    assert!(run(0).unwrap().iter().all(|&x| x == 16.0));

    // The tiles read before the barrier that orders the other threads' stores.
    let f = finding(run(1).map(drop));
    let (array, _, first, second) = race(&f);
    assert_eq!(array, "sa");
    assert_eq!(
        (first.kind, line(first), second.kind, line(second)),
        (
            AccessKind::Write,
            line_of("// wgmma: stage"),
            AccessKind::Read,
            line_of("// wgmma: product")
        )
    );

    // A write after the barrier, but before the wait: the tensor cores may still read it.
    let f = finding(run(2).map(drop));
    let Finding::OperandInFlight {
        array,
        write,
        product,
        warpgroup,
        ..
    } = &f
    else {
        panic!("expected an operand in flight, found: {f}");
    };
    assert_eq!((*array, *warpgroup), ("sa", 0));
    assert_eq!(line(write), line_of("// wgmma: overwrite"));
    assert_eq!(product.line(), line_of("// wgmma: product"));
    assert_mentions(&f.to_string(), &["wgmma::mma_async", "wgmma::wait_group"]);

    // Tiles nothing wrote.
    let f = finding(run(3).map(drop));
    let (array, _, access) = uninit(&f);
    assert_eq!((array, line(access)), ("sa", line_of("// wgmma: product")));

    // Warps 2 and 3 at another place than warps 0 and 1: each warp's lanes agree.
    let err = run(4).unwrap_err().to_string();
    let apart = format!("{THIS_FILE}:{}", line_of("// wgmma: apart"));
    let product = format!("{THIS_FILE}:{}", line_of("// wgmma: product"));
    assert_mentions(&err, &["wgmma::mma_async", "warp 2 ", &apart, &product]);

    // Warp 3 returned: the block ends with its warpgroup's operations uncalled.
    let err = run(5).unwrap_err().to_string();
    assert_mentions(&err, &["wgmma::fence", "warp 3 of its warpgroup does not"]);

    // The accumulator read before the wait for its product.
    let err = run(6).unwrap_err().to_string();
    let early = format!("{THIS_FILE}:{}", line_of("// wgmma: early"));
    assert_mentions(&err, &["WgAccumulator::for_each", &early, "wait_group"]);

    // The product straight after the accumulator's zeros, with no fence.
    let err = run(7).unwrap_err().to_string();
    assert_mentions(&err, &["wgmma::mma_async", &product, "wgmma::fence"]);
}
