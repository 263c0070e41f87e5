//! The MPI collectives on device arrays, checked on every rank of a job: run under `mpirun -np N`
//! (`cargo xtask mpi` runs it on 1, 2 and 4 ranks, on the CPU backend and on fake GPUs through
//! the fake NCCL). Built only with the `mpi` feature; a failed check on any rank ends the job
//! with an error.
//!
//! `EXPECT_NCCL=1` (or `0`) checks that the collectives go through NCCL (or do not). Where the
//! fake driver logs (`FAKE_CUDA_LOG`, `%p` for each rank's process id), each rank's log must
//! order every pair of uses of one allocation that conflict.

#[allow(dead_code)]
#[path = "fake_driver/happens_before.rs"]
mod happens_before;

use kernel_runtime::cluster::{Cluster, ReduceOp};
use kernel_runtime::ndarray::Array2;
use kernel_runtime::{Device, DeviceArray1, Error};

type Result<T = ()> = std::result::Result<T, String>;

/// `FAIL_ON_RANK=R`: rank R fails at once while the others wait in a collective for it, to
/// check that the job ends rather than hangs (`cargo xtask mpi`).
const FAIL_ON_RANK: &str = "FAIL_ON_RANK";

fn main() {
    Cluster::run(|cluster| {
        let fail_on = std::env::var(FAIL_ON_RANK)
            .ok()
            .and_then(|r| r.parse::<usize>().ok());
        if let Some(rank) = fail_on {
            if cluster.rank() == rank {
                return Err(format!("rank {rank} fails, as {FAIL_ON_RANK} asks"));
            }
            cluster.barrier();
        }
        for (name, check) in CHECKS {
            check(cluster).map_err(|e| format!("{name}: {e}"))?;
            if cluster.rank() == 0 {
                println!("ok: {name}");
            }
        }
        no_races()
    })
}

/// Every conflicting pair of uses in this rank's fake-driver log is ordered.
fn no_races() -> Result {
    let Ok(path) = std::env::var("FAKE_CUDA_LOG") else {
        return Ok(());
    };
    let path = path.replace("%p", &std::process::id().to_string());
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let lines: Vec<String> = text.lines().map(String::from).collect();
    let trace = happens_before::Trace::of(&lines);
    check(trace.races().is_empty(), || {
        format!("{path}: {:#?}", trace.races())
    })
}

/// The collectives go where `EXPECT_NCCL` says.
fn nccl_as_expected(c: &Cluster) -> Result {
    let Ok(want) = std::env::var("EXPECT_NCCL") else {
        return Ok(());
    };
    check(c.uses_nccl() == (want == "1"), || {
        format!(
            "rank {} uses NCCL: {}, EXPECT_NCCL={want}",
            c.rank(),
            c.uses_nccl()
        )
    })
}

/// Under NCCL, an array of another device than the rank's is refused on every rank; else it
/// takes part like any other. A transfer of one is refused on both ranks.
fn other_device(c: &Cluster) -> Result {
    if c.size() > 1 && c.rank() < 2 {
        let on_cpu = Device::cpu().to_device(&[9u8; 3]).map_err(err)?;
        let mut into = c.device().zeros::<u8, _>(3).map_err(err)?;
        let done = match c.rank() {
            0 => c.send(&on_cpu, 1),
            _ => c.recv(&mut into, 0),
        };
        match (c.uses_nccl(), done) {
            (true, Err(Error::Mpi { .. })) => {}
            (false, Ok(())) => {}
            (_, other) => return Err(format!("rank {}: {other:?}", c.rank())),
        }
        if c.rank() == 1 && !c.uses_nccl() {
            let got = into.to_vec().map_err(err)?;
            check(got == [9; 3], || format!("rank 1 got {got:?}"))?;
        }
    }
    let mut a = Device::cpu()
        .to_device(&[c.rank() as u32 + 1])
        .map_err(err)?;
    let done = c.broadcast(&mut a, 0);
    match (c.uses_nccl(), done) {
        (true, Err(Error::Mpi { .. })) => Ok(()),
        (true, other) => Err(format!("rank {} got {other:?}", c.rank())),
        (false, done) => {
            done.map_err(err)?;
            let got = a.to_vec().map_err(err)?;
            check(got == [1], || format!("rank {} got {got:?}", c.rank()))
        }
    }
}

/// A check run on every rank, named.
type Check = (&'static str, fn(&Cluster) -> Result);

const CHECKS: [Check; 14] = [
    (
        "the collectives go where EXPECT_NCCL says",
        nccl_as_expected,
    ),
    ("shares split the items in rank order", shares),
    ("broadcast copies the root's array", broadcast),
    ("all_reduce_sum adds the ranks' arrays", all_reduce),
    ("all_reduce takes the max, min and product", reduce_ops),
    (
        "reduce combines the ranks' arrays on the root alone",
        reduce_to_root,
    ),
    ("gather concatenates arrays of any length", gather),
    (
        "all_gather concatenates arrays of any length on every rank",
        all_gather,
    ),
    (
        "scatter splits the root's array into the ranks' parts",
        scatter,
    ),
    ("exchange_rows fills two halo rows", halo_rows),
    (
        "exchange_blocks fills the halos of a 2-D split",
        halo_blocks,
    ),
    ("an array of another device", other_device),
    ("send_recv passes arrays around a ring", ring),
    (
        "send and recv refuse arrays of other lengths on both ranks",
        send_mismatch,
    ),
];

fn check(ok: bool, what: impl FnOnce() -> String) -> Result {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

fn err(e: Error) -> String {
    e.to_string()
}

fn shares(c: &Cluster) -> Result {
    let mine = c.share(10);
    let want = (10 / c.size()) + usize::from(c.rank() < 10 % c.size());
    check(mine.len() == want, || {
        format!("rank {} got {mine:?}", c.rank())
    })
}

fn broadcast(c: &Cluster) -> Result {
    let root = c.size() - 1;
    let mine = vec![c.rank() as u32 * 10 + 1; 5];
    let mut a = c.device().to_device(&mine).map_err(err)?;
    c.broadcast(&mut a, root).map_err(err)?;
    let got = a.to_vec().map_err(err)?;
    check(got == vec![root as u32 * 10 + 1; 5], || {
        format!("rank {} got {got:?}", c.rank())
    })?;
    let refused = c.broadcast(&mut a, c.size());
    check(matches!(refused, Err(Error::Mpi { .. })), || {
        "a rank past the job was taken".into()
    })
}

fn all_reduce(c: &Cluster) -> Result {
    let mut a = c
        .device()
        .to_device(&[c.rank() as i64, 1, -2])
        .map_err(err)?;
    c.all_reduce_sum(&mut a).map_err(err)?;
    let n = c.size() as i64;
    let want = [n * (n - 1) / 2, n, -2 * n];
    let got = a.to_vec().map_err(err)?;
    check(got == want, || {
        format!("rank {} got {got:?}, not {want:?}", c.rank())
    })?;
    // i16, which NCCL does not sum, goes through MPI; f64 through NCCL where it serves.
    let mut small = c.device().to_device(&[c.rank() as i16, -1]).map_err(err)?;
    c.all_reduce_sum(&mut small).map_err(err)?;
    let got = small.to_vec().map_err(err)?;
    let want = [(n * (n - 1) / 2) as i16, -n as i16];
    check(got == want, || format!("rank {} got {got:?}", c.rank()))?;
    let mut halves = c.device().to_device(&[0.5f64; 3]).map_err(err)?;
    c.all_reduce_sum(&mut halves).map_err(err)?;
    let got = halves.to_vec().map_err(err)?;
    check(got == [0.5 * n as f64; 3], || {
        format!("rank {} got {got:?}", c.rank())
    })
}

fn reduce_ops(c: &Cluster) -> Result {
    let (r, n) = (c.rank() as i32, c.size() as i32);
    let mut most = c.device().to_device(&[r, -r, r + 1]).map_err(err)?;
    c.all_reduce(&mut most, ReduceOp::Max).map_err(err)?;
    let mut least = c.device().to_device(&[r as f32 - 0.5]).map_err(err)?;
    c.all_reduce(&mut least, ReduceOp::Min).map_err(err)?;
    let mut product = c.device().to_device(&[2i64, r as i64 + 1]).map_err(err)?;
    c.all_reduce(&mut product, ReduceOp::Prod).map_err(err)?;
    // i16 goes through MPI, also under NCCL.
    let mut small = c.device().to_device(&[-(r as i16)]).map_err(err)?;
    c.all_reduce(&mut small, ReduceOp::Min).map_err(err)?;
    let factorial: i64 = (1..=n as i64).product();
    let got = (
        most.to_vec().map_err(err)?,
        least.to_vec().map_err(err)?,
        product.to_vec().map_err(err)?,
        small.to_vec().map_err(err)?,
    );
    let want = (
        vec![n - 1, 0, n],
        vec![-0.5f32],
        vec![1i64 << n, factorial],
        vec![-(n as i16) + 1],
    );
    check(got == want, || {
        format!("rank {} got {got:?}, not {want:?}", c.rank())
    })
}

fn gather(c: &Cluster) -> Result {
    // Rank r gives r + 1 copies of r.
    let mine = vec![c.rank() as u16; c.rank() + 1];
    let a = c.device().to_device(&mine).map_err(err)?;
    let got = c.gather(&a, 0).map_err(err)?;
    let want: Vec<u16> = (0..c.size()).flat_map(|r| vec![r as u16; r + 1]).collect();
    match (c.rank(), got) {
        (0, Some(all)) => check(all == want, || format!("rank 0 got {all:?}")),
        (0, None) => Err("rank 0 got nothing".into()),
        (r, Some(_)) => Err(format!("rank {r} got a result")),
        (_, None) => Ok(()),
    }
}

fn halo_rows(c: &Cluster) -> Result {
    // A 3-column array of 5 rows per rank, each element its global row; 2 halo rows each side.
    let (halo, own, cols) = (2, 5, 3);
    let above = if c.rank() > 0 { halo } else { 0 };
    let below = if c.rank() + 1 < c.size() { halo } else { 0 };
    let first = (c.rank() * own) as i64 - above as i64;
    let rows = above + own + below;
    let start = Array2::from_shape_fn((rows, cols), |(i, _)| {
        let own_row = i >= above && i < above + own;
        if own_row {
            first + i as i64
        } else {
            -1
        }
    });
    let mut a = c.device().to_device(&start).map_err(err)?;
    c.exchange_rows(&mut a, halo).map_err(err)?;
    let got = a.to_host().map_err(err)?;
    let want = Array2::from_shape_fn((rows, cols), |(i, _)| first + i as i64);
    check(got == want, || format!("rank {} got {got:?}", c.rank()))?;
    let mut thin = c
        .device()
        .zeros::<i64, _>((above + 1 + below, cols))
        .map_err(err)?;
    let refused = c.exchange_rows(&mut thin, halo);
    check(matches!(refused, Err(Error::ShapeMismatch { .. })), || {
        "fewer own rows than the halo were taken".into()
    })
}

fn halo_blocks(c: &Cluster) -> Result {
    // A 9 × 10 array split over a grid of 1 × 1, 1 × 2 or 2 × 2 ranks, each element 100 i + j;
    // halos of 2 start at -1 and must end as the neighbours' elements, corners included.
    let grid = if c.size().is_multiple_of(2) {
        (c.size() / 2, 2)
    } else {
        (c.size(), 1)
    };
    let (halo, shape) = (2, (9, 10));
    let (rows, cols) = c.block(shape, grid).map_err(err)?;
    let before = |r: &std::ops::Range<usize>| if r.start > 0 { halo } else { 0 };
    let after = |r: &std::ops::Range<usize>, n: usize| if r.end < n { halo } else { 0 };
    let (top, left) = (before(&rows), before(&cols));
    let held = (
        top + rows.len() + after(&rows, shape.0),
        left + cols.len() + after(&cols, shape.1),
    );
    let global = |i: usize, j: usize| (100 * (rows.start + i - top) + cols.start + j - left) as i32;
    let start = Array2::from_shape_fn(held, |(i, j)| {
        let own = (top..top + rows.len()).contains(&i) && (left..left + cols.len()).contains(&j);
        if own {
            global(i, j)
        } else {
            -1
        }
    });
    let mut a = c.device().to_device(&start).map_err(err)?;
    c.exchange_blocks(&mut a, grid, halo).map_err(err)?;
    let got = a.to_host().map_err(err)?;
    let want = Array2::from_shape_fn(held, |(i, j)| global(i, j));
    check(got == want, || {
        format!("rank {} of {grid:?} got {got:?}", c.rank())
    })?;
    let refused = c.exchange_blocks(&mut a, (c.size() + 1, 1), halo);
    check(matches!(refused, Err(Error::Mpi { .. })), || {
        "a grid of the wrong size was taken".into()
    })
}

fn ring(c: &Cluster) -> Result {
    let (r, n) = (c.rank(), c.size());
    let (to, from) = ((r + 1) % n, (r + n - 1) % n);
    let mine = c.device().to_device(&[r as u32 * 7; 3]).map_err(err)?;
    let mut got = c.device().zeros::<u32, _>(3).map_err(err)?;
    let done = c.send_recv(&mine, to, &mut got, from);
    if n == 1 {
        return check(matches!(done, Err(Error::Mpi { .. })), || {
            format!("a rank sent to itself: {done:?}")
        });
    }
    done.map_err(err)?;
    let got = got.to_vec().map_err(err)?;
    check(got == [from as u32 * 7; 3], || {
        format!("rank {r} got {got:?} from rank {from}")
    })
}

fn send_mismatch(c: &Cluster) -> Result {
    let (r, last) = (c.rank(), c.size() - 1);
    if last == 0 {
        return Ok(());
    }
    let four = c.device().to_device(&[1.5f64; 4]).map_err(err)?;
    let mut five = c.device().zeros::<f64, _>(5).map_err(err)?;
    let mut room = c.device().zeros::<f64, _>(4).map_err(err)?;
    // Refused on both ranks, then a transfer that fits goes through.
    let (refused, then) = match r {
        0 => (c.send(&four, last), c.send(&four, last)),
        r if r == last => (c.recv(&mut five, 0), c.recv(&mut room, 0)),
        _ => return Ok(()),
    };
    check(matches!(refused, Err(Error::ShapeMismatch { .. })), || {
        format!("rank {r}: {refused:?}")
    })?;
    then.map_err(err)?;
    if r == last {
        let got = room.to_vec().map_err(err)?;
        check(got == [1.5; 4], || format!("rank {r} got {got:?}"))?;
        let untouched = five.to_vec().map_err(err)?;
        check(untouched == [0.0; 5], || {
            format!("rank {r} wrote {untouched:?}")
        })?;
    }
    Ok(())
}

fn all_gather(c: &Cluster) -> Result {
    // Rank r gives r + 1 copies of 10 r.
    let mine = vec![c.rank() as i32 * 10; c.rank() + 1];
    let a = c.device().to_device(&mine).map_err(err)?;
    let all = c.all_gather(&a).map_err(err)?;
    check(all.device() == c.device(), || {
        "the result is on another device".into()
    })?;
    let got = all.to_vec().map_err(err)?;
    let want: Vec<i32> = (0..c.size())
        .flat_map(|r| vec![r as i32 * 10; r + 1])
        .collect();
    check(got == want, || format!("rank {} got {got:?}", c.rank()))
}

fn scatter(c: &Cluster) -> Result {
    // Rank r takes r + 2 elements of 0, 1, 2, ... from the last rank.
    let (n, root) = (c.size(), c.size() - 1);
    let total: usize = (0..n).map(|r| r + 2).sum();
    let whole = c
        .device()
        .to_device(&(0..total as u32).collect::<Vec<_>>())
        .map_err(err)?;
    let mut part = c.device().zeros::<u32, _>(c.rank() + 2).map_err(err)?;
    c.scatter(Some(&whole), &mut part, root).map_err(err)?;
    let start: usize = (0..c.rank()).map(|r| r + 2).sum();
    let want: Vec<u32> = (start as u32..(start + c.rank() + 2) as u32).collect();
    let got = part.to_vec().map_err(err)?;
    check(got == want, || format!("rank {} got {got:?}", c.rank()))?;
    // A root's array of the wrong length is refused on every rank, and so is none.
    let short = c.device().zeros::<u32, _>(total - 1).map_err(err)?;
    let refused = c.scatter(Some(&short), &mut part, root);
    check(matches!(refused, Err(Error::ShapeMismatch { .. })), || {
        format!("rank {}: {refused:?}", c.rank())
    })?;
    let refused = c.scatter(None::<&DeviceArray1<u32>>, &mut part, 0);
    check(matches!(refused, Err(Error::ShapeMismatch { .. })), || {
        format!("rank {}: {refused:?}", c.rank())
    })
}

fn reduce_to_root(c: &Cluster) -> Result {
    let (r, n, root) = (c.rank() as i64, c.size() as i64, c.size() - 1);
    let mine = [r + 1, -r];
    let mut a = c.device().to_device(&mine).map_err(err)?;
    c.reduce(&mut a, ReduceOp::Sum, root).map_err(err)?;
    // u16 goes through MPI, also under NCCL.
    let mut small = c.device().to_device(&[r as u16 + 3]).map_err(err)?;
    c.reduce(&mut small, ReduceOp::Max, root).map_err(err)?;
    let got = (a.to_vec().map_err(err)?, small.to_vec().map_err(err)?);
    let want = match c.rank() == root {
        true => (vec![n * (n + 1) / 2, -n * (n - 1) / 2], vec![n as u16 + 2]),
        false => (mine.to_vec(), vec![r as u16 + 3]),
    };
    check(got == want, || {
        format!("rank {r} got {got:?}, not {want:?}")
    })?;
    let refused = c.reduce(&mut a, ReduceOp::Sum, c.size());
    check(matches!(refused, Err(Error::Mpi { .. })), || {
        "a root past the job was taken".into()
    })
}
